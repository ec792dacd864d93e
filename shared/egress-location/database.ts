/**
 * The offline egress-location database: the country from `@ip-location-db/geo-whois-asn-country-mmdb`
 * (an MMDB file, read with `mmdb-lib`) and the AS number and organisation from `@ip-location-db/asn`
 * (range files; that project publishes no ASN MMDB to the registry). Both come with the packages the
 * lockfile pins: updating the data is a package update (docs/operations.md "Egress location").
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Reader } from 'mmdb-lib';
import { findRange } from './asn-ranges.js';
import { ipNumber } from './ip-number.js';

/** What the database says about one address; a field it has nothing for is undefined. */
export interface EgressLocation {
  /** ISO 3166-1 alpha-2, upper case. */
  country: string | undefined;
  asn: number | undefined;
  /** The AS organisation's name. */
  asnOrg: string | undefined;
}

/** Looks egress addresses up. */
export interface EgressLocator {
  locate(ip: string): EgressLocation;
}

/** The database files. */
export interface EgressDatabaseFiles {
  countryMmdb: string;
  asnIpv4: string;
  asnIpv6: string;
}

/** The files of the installed packages. */
export function packagedFiles(): EgressDatabaseFiles {
  const require = createRequire(import.meta.url);
  return {
    countryMmdb: require.resolve('@ip-location-db/geo-whois-asn-country-mmdb/geo-whois-asn-country.mmdb'),
    asnIpv4: require.resolve('@ip-location-db/asn/asn-ipv4-num.csv'),
    asnIpv6: require.resolve('@ip-location-db/asn/asn-ipv6-num.csv'),
  };
}

const countryRecord = (v: unknown): string | undefined => {
  const code = (v as { country_code?: unknown } | null)?.country_code;
  return typeof code === 'string' && /^[A-Z]{2}$/.test(code) ? code : undefined;
};

class FileLocator implements EgressLocator {
  private loaded: { country: Reader<object>; asn4: Buffer; asn6: Buffer } | undefined;

  constructor(private readonly files: EgressDatabaseFiles) {}

  /** Reads the files on the first lookup (about 40 MB), so a process that never looks up pays nothing. */
  private db() {
    this.loaded ??= {
      country: new Reader<object>(readFileSync(this.files.countryMmdb)),
      asn4: readFileSync(this.files.asnIpv4),
      asn6: readFileSync(this.files.asnIpv6),
    };
    return this.loaded;
  }

  locate(ip: string): EgressLocation {
    const n = ipNumber(ip);
    if (!n) return { country: undefined, asn: undefined, asnOrg: undefined };
    const db = this.db();
    const range = findRange(n.family === 4 ? db.asn4 : db.asn6, n.value);
    return { country: countryRecord(db.country.get(n.text)), asn: range?.asn, asnOrg: range?.org };
  }
}

let packaged: EgressLocator | undefined;

/** The one locator of this process over the packaged files (read on its first lookup). */
export function packagedLocator(): EgressLocator {
  packaged ??= openEgressDatabase();
  return packaged;
}

/**
 * Opens the database; the files are read on the first lookup.
 *
 * @example
 * openEgressDatabase().locate('8.8.8.8') // { country: 'US', asn: 15169, asnOrg: 'Google LLC' }
 */
export function openEgressDatabase(files: EgressDatabaseFiles = packagedFiles()): EgressLocator {
  return new FileLocator(files);
}
