/** Reading a configuration file (YAML or JSON): the functions' (EGRESS_CONFIG) and the relay's (EGRESS_RELAY_CONFIG). */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { ValidationError } from '../errors.js';

/**
 * Reads a config file (YAML or JSON).
 *
 * @param field - what named the file, in errors (`EGRESS_CONFIG`, `EGRESS_RELAY_CONFIG`, `--config`)
 * @throws ValidationError naming `field` when it cannot be read or parsed
 */
export function readConfigFile(path: string, field = 'EGRESS_CONFIG'): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ValidationError(field, `cannot read ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  try {
    return parseYaml(text);
  } catch (err) {
    throw new ValidationError(
      field,
      `${path} is not valid YAML/JSON: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}
