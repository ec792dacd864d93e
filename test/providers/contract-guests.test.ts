/**
 * The providers whose instances are real qemu guests (`kvm`) against the shared contract, end to
 * end as the functions use them: in the `guests` project (vitest.config.ts), one file at a time,
 * since their guests take both cores.
 */
import { KIT_LIST } from '../kits/registry.js';
import { runProviderContract } from './contract.case.js';

for (const kit of KIT_LIST) if (kit.contract.bootsGuests) runProviderContract(kit);
