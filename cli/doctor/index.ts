/** `egress doctor`: reads the project against what the deployment needs and prints each finding with its fix (exit 0: none, 1: some). */
import { resolve } from 'node:path';
import type { VmFootprint } from '../../shared/domain/footprint.js';
import type { Command } from '../command.js';
import type { Io } from '../commands.js';
import { loadFleet } from '../cost.js';
import { diagnose, type Finding } from './checks.js';
import { createGoogleReader, GOOGLE_ENDPOINTS, type Endpoints } from './google.js';
import { makePlan } from './plan.js';

type DoctorCommand = Extract<Command, { verb: 'doctor' }>;

/** The findings as the user reads them: what will fail, then the fix, per finding. */
export function formatFindings(project: string, findings: readonly Finding[]): string {
  if (findings.length === 0) return `egress doctor: ${project}: no findings; every check passed\n`;
  const body = findings
    .map((f, i) => `${i + 1}. [${f.check}] ${f.problem}\n${f.fix.map((x) => `   fix: ${x}`).join('\n')}`)
    .join('\n');
  return `egress doctor: ${project}: ${findings.length} finding(s)\n${body}\n`;
}

/**
 * @param endpoints - where the Google APIs are (tests pass fakes)
 * @returns the exit code: 0 when every check passed, 1 when there are findings
 * @throws ValidationError or Error for a config, fleet or infra file that cannot be read
 */
export async function runDoctor(io: Io, cmd: DoctorCommand, endpoints: Endpoints = GOOGLE_ENDPOINTS): Promise<number> {
  const { config, fleet } = loadFleet(io, cmd);
  const vms = fleet.flatMap((item) =>
    item.footprint.kind === 'vm' ? [{ vm: item.footprint satisfies VmFootprint, count: item.count }] : [],
  );
  const plan = makePlan(config, resolve(io.cwd, cmd.infra), vms, {
    apiPublic: cmd.apiPublic,
    functionsRange: cmd.functionsRange,
  });
  const findings = await diagnose(plan, await createGoogleReader(endpoints));
  io.stdout.write(formatFindings(plan.project, findings));
  return findings.length === 0 ? 0 : 1;
}
