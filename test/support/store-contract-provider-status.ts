/**
 * `ProviderStatusRepository` for every store (run inside `describe('store contract: <name>')`): the
 * latest verdict per provider.
 */
import { describe, expect, it } from 'vitest';
import type { ProviderStatusRepository } from '../../shared/store/ports.js';
import { T } from './store-contract-requests.js';

export function providerStatusContract(open: () => Promise<ProviderStatusRepository>): void {
  describe('provider verdicts', () => {
    it('the latest verdict per provider, every one in name order', async () => {
      const providerStatus = await open();
      const verdict = (name: string, status: 'Healthy' | 'Unhealthy') => ({
        name,
        type: 'process',
        status,
        message: status,
        latencyMs: 1,
        lastCheckAt: new Date(T).toISOString(),
      });
      await providerStatus.write(verdict('b', 'Healthy'));
      await providerStatus.write(verdict('a', 'Healthy'));
      await providerStatus.write(verdict('b', 'Unhealthy'));
      expect(await providerStatus.get('b')).toMatchObject({ status: 'Unhealthy' });
      expect(await providerStatus.get('c')).toBeUndefined();
      expect((await providerStatus.all()).map((v) => `${v.name}=${v.status}`)).toEqual(['a=Healthy', 'b=Unhealthy']);
    });
  });
}
