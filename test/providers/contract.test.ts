/**
 * Every provider against the shared contract, built as the functions build it against its kit's
 * backend (test/kits/<type>.ts): the relay-backed ones through a real relay agent over the
 * emulators, the cloud ones through their wire-level fakes, `static` over vendor stand-ins. A
 * provider whose instances are real guests runs in `contract-guests.test.ts` instead.
 */
import { KIT_LIST } from '../kits/registry.js';
import { runProviderContract } from './contract.case.js';

for (const kit of KIT_LIST) if (!kit.contract.bootsGuests) runProviderContract(kit);
