/** `printable`: escape sequences and control characters out, text (with tabs and newlines) kept. */
import { describe, expect, it } from 'vitest';
import { printable, printableIo } from './printable.js';

describe('printable', () => {
  it.each([
    ['plain text, tabs and newlines stay', 'a\tb\nc é 日本', 'a\tb\nc é 日本'],
    ['a colour (CSI) goes whole', 'x\x1b[1;31mred\x1b[0m', 'xred'],
    ['a window title (OSC, BEL-ended) goes whole', '\x1b]0;pwned\x07ok', 'ok'],
    ['an OSC ended by ST goes whole', '\x1b]8;;http://evil\x1b\\link', 'link'],
    ['carriage return and backspace go', 'safe\rEVIL\b', 'safeEVIL'],
    ['C1 CSI (one code point) and DEL go', 'a\x9b2Jb\x7f', 'a2Jb'],
    ['a lone ESC goes', 'a\x1b', 'a'],
    ['NUL and vertical tab go', 'a\x00b\x0bc', 'abc'],
  ])('%s', (_, text, expected) => {
    expect(printable(text)).toBe(expected);
  });

  it("the CLI's own line clearing passes; writes are made printable", () => {
    let out = '';
    let err = '';
    const io = printableIo({
      stdout: { isTTY: true, columns: 80, write: (t: string) => void (out += t) },
      stderr: { write: (t: string) => void (err += t) },
      env: {},
      cwd: '.',
    });
    io.stdout.clearLine?.();
    io.stdout.write('\x1b[2Jname');
    io.stderr.write('error: \x1b[31mx\n');
    expect(out).toBe('\r\x1b[2Kname');
    expect(err).toBe('error: x\n');
    expect(io.stdout.columns).toBe(80);
  });
});
