/** The bench's cleanup: newest first, once, past a failing stop. */
import { describe, expect, it } from 'vitest';
import { Cleanup } from './cleanup.js';

describe('Cleanup', () => {
  it('stops newest first, each once, even when one fails', async () => {
    const stopped: string[] = [];
    const cleanup = new Cleanup();
    cleanup.add(() => Promise.resolve(stopped.push('emulators')));
    cleanup.add(() => Promise.reject(new Error('already gone')));
    cleanup.add(() => Promise.resolve(stopped.push('pool')));
    await Promise.all([cleanup.run(), cleanup.run()]);
    await cleanup.run();
    expect(stopped).toEqual(['pool', 'emulators']);
  });

  it('a stop run early is not run again', async () => {
    let runs = 0;
    const cleanup = new Cleanup();
    const stop = cleanup.add(() => Promise.resolve(runs++));
    await stop();
    await stop();
    await cleanup.run();
    expect(runs).toBe(1);
  });
});
