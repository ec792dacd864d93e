/** Procedure numbers of `remote_protocol.x` this client calls, and the XDR layouts of libvirt's object references. */
import type { DomainRef, StoragePoolRef, StorageVolRef } from './types.js';
import type { XdrReader, XdrWriter } from './xdr.js';

/** `REMOTE_PROC_*` numbers (libvirt's `remote_procedure` enum). */
export const Proc = {
  CONNECT_OPEN: 1,
  CONNECT_CLOSE: 2,
  DOMAIN_GET_XML_DESC: 14,
  DOMAIN_LOOKUP_BY_NAME: 23,
  CONNECT_GET_HOSTNAME: 59,
  CONNECT_SUPPORTS_FEATURE: 60,
  AUTH_LIST: 66,
  AUTH_POLKIT: 70,
  STORAGE_POOL_REFRESH: 83,
  STORAGE_POOL_LOOKUP_BY_NAME: 84,
  STORAGE_POOL_GET_INFO: 87,
  STORAGE_VOL_CREATE_XML: 93,
  STORAGE_VOL_DELETE: 94,
  STORAGE_VOL_LOOKUP_BY_NAME: 95,
  STORAGE_VOL_GET_INFO: 98,
  STORAGE_VOL_GET_PATH: 100,
  CONNECT_GET_LIB_VERSION: 157,
  DOMAIN_CREATE_WITH_FLAGS: 196,
  STORAGE_VOL_UPLOAD: 208,
  DOMAIN_GET_STATE: 212,
  DOMAIN_UNDEFINE_FLAGS: 231,
  DOMAIN_DESTROY_FLAGS: 234,
  DOMAIN_SET_METADATA: 264,
  DOMAIN_GET_METADATA: 265,
  CONNECT_LIST_ALL_DOMAINS: 273,
  DOMAIN_DEFINE_XML_FLAGS: 350,
  DOMAIN_INTERFACE_ADDRESSES: 353,
} as const;

/** A procedure's name, as used in errors. */
export type ProcName = keyof typeof Proc;

/** `VIR_UUID_BUFLEN`. */
export const UUID_BYTES = 16;
/** Array bounds from remote_protocol.x. */
export const LIMITS = {
  DOMAIN_LIST: 16_384,
  AUTH_TYPES: 20,
  INTERFACES: 2048,
  IP_ADDRESSES: 2048,
} as const;

/** `VIR_DRV_FEATURE_PROGRAM_KEEPALIVE`: asking about it makes the daemon start its own keepalive pings. */
export const FEATURE_PROGRAM_KEEPALIVE = 10;
/** `remote_auth_type`. */
export const AuthType = { NONE: 0, SASL: 1, POLKIT: 2 } as const;

/** `remote_nonnull_domain` { name, uuid, id }. */
export const writeDomain = (w: XdrWriter, d: DomainRef): XdrWriter =>
  w.string(d.name).fixedOpaque(d.uuid, UUID_BYTES).int(d.id);
export const readDomain = (r: XdrReader): DomainRef => ({
  name: r.string(),
  uuid: r.fixedOpaque(UUID_BYTES),
  id: r.int(),
});

/** `remote_nonnull_storage_pool` { name, uuid }. */
export const writePool = (w: XdrWriter, p: StoragePoolRef): XdrWriter =>
  w.string(p.name).fixedOpaque(p.uuid, UUID_BYTES);
export const readPool = (r: XdrReader): StoragePoolRef => ({ name: r.string(), uuid: r.fixedOpaque(UUID_BYTES) });

/** `remote_nonnull_storage_vol` { pool, name, key }. */
export const writeVol = (w: XdrWriter, v: StorageVolRef): XdrWriter => w.string(v.pool).string(v.name).string(v.key);
export const readVol = (r: XdrReader): StorageVolRef => ({ pool: r.string(), name: r.string(), key: r.string() });
