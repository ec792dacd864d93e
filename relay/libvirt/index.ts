/** Public API of the libvirt remote-protocol client: `connect(uri)` and the {@link LibvirtConnection} it returns. */

export { connect } from './connect.js';
export type { ConnectOptions, TlsOptions, SshOptions, KeepaliveOptions } from './connect.js';
export { parseLibvirtUri, type LibvirtUri, type Transport } from './uri.js';
export {
  LibvirtError,
  LibvirtConnectionError,
  LibvirtConnectionLostError,
  LibvirtConnectionClosedError,
  LibvirtTimeoutError,
  LibvirtCancelledError,
  LibvirtProtocolError,
  LibvirtUriError,
  isLibvirtError,
} from './errors.js';
export {
  ErrorCode,
  DomainState,
  ListDomainsFlags,
  UndefineFlags,
  MetadataType,
  ModificationImpact,
  AddressSource,
  AddressType,
  StoragePoolState,
  StorageVolType,
} from './constants.js';
export type * from './types.js';
