/** Reading the relay's config file (YAML or JSON). */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { ValidationError } from '../shared/errors.js';

/** Reads the relay config file named by EGRESS_RELAY_CONFIG (YAML or JSON). @throws ValidationError naming EGRESS_RELAY_CONFIG */
export function readConfigFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ValidationError(
      'EGRESS_RELAY_CONFIG',
      `cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  try {
    return parseYaml(text);
  } catch (err) {
    throw new ValidationError(
      'EGRESS_RELAY_CONFIG',
      `${file} is not valid YAML/JSON: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}
