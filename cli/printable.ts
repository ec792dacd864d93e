/**
 * What the CLI prints from the API made inert for a terminal: names, messages, events and errors
 * can carry anything a sender typed, and an escape sequence in them could recolour, move the
 * cursor, retitle the window or hide a line. Every write of `run` goes through `printable`.
 */
import type { Io } from './commands.js';

/** CSI (`ESC [ … final`), OSC (`ESC ] … BEL|ST`) and two-character escapes: removed whole. */
const ESCAPE_SEQUENCES = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]/g;
/** Every other C0 control but tab and newline, DEL, and the C1 controls (U+0080–U+009F, CSI as one code point). */
const CONTROLS = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

/** `text` without terminal escape sequences and control characters (tab and newline kept). */
export function printable(text: string): string {
  return text.replace(ESCAPE_SEQUENCES, '').replace(CONTROLS, '');
}

/**
 * The CLI's streams as the commands see them: every write made printable. `clearLine` is the one
 * control sequence the CLI itself writes (a terminal's updating progress line), kept out of `write`.
 */
export function printableIo(io: Io): Io {
  const { stdout, stderr } = io;
  return {
    ...io,
    stdout: {
      write: (text: string) => stdout.write(printable(text)),
      clearLine: () => stdout.write('\r\x1b[2K'),
      isTTY: stdout.isTTY,
      get columns() {
        return stdout.columns;
      },
    },
    stderr: { write: (text: string) => stderr.write(printable(text)) },
  };
}
