/** Atomic file replacement: a temporary file in the same directory, then a rename. */
import { randomBytes } from 'node:crypto';
import { rename, rm, writeFile } from 'node:fs/promises';

/**
 * Writes `text` to `file` atomically, so a reader never sees half a file and a crash leaves the
 * previous version.
 *
 * @param mode - file mode of the new file (default 0600: relay state may hold credentials)
 */
export async function writeFileAtomic(file: string, text: string, mode = 0o600): Promise<void> {
  const temp = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await writeFile(temp, text, { mode, flush: true });
    await rename(temp, file);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}
