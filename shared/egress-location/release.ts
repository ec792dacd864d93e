/**
 * The releases of the egress-location data this build ships, for people (`GET /v1/providers`,
 * `egress get providers`, the dashboard): the packages' own metadata, so the API shows the date
 * without loading the data.
 */
import asnPackage from '@ip-location-db/asn/package.json' with { type: 'json' };
import countryPackage from '@ip-location-db/geo-whois-asn-country-mmdb/package.json' with { type: 'json' };

/** One data package and the date its data was published. */
export interface DatabaseRelease {
  package: string;
  version: string;
  /** From the version's last part (`2.3.2026061719` is 2026-06-17 19:00 UTC), as the publisher numbers releases. */
  publishedAt: string | null;
}

function releaseOf(pkg: { name: string; version: string }): DatabaseRelease {
  const stamp = /\.(\d{4})(\d{2})(\d{2})(\d{2})$/.exec(pkg.version);
  const publishedAt = stamp ? `${stamp[1]}-${stamp[2]}-${stamp[3]}T${stamp[4]}:00:00Z` : null;
  return { package: pkg.name, version: pkg.version, publishedAt };
}

/** The releases of the data this build ships (`GET /v1/providers` shows them as `egressDatabase`). */
export const EGRESS_DATABASE: { country: DatabaseRelease; asn: DatabaseRelease } = Object.freeze({
  country: releaseOf(countryPackage),
  asn: releaseOf(asnPackage),
});
