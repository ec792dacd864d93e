import { describe, expect, it } from 'vitest';
import { findRange } from './asn-ranges.js';
import { openEgressDatabase } from './database.js';
import { EGRESS_DATABASE } from './release.js';
import { ipNumber } from './ip-number.js';

describe('egress verify: address numbers', () => {
  it.each([
    ['1.0.0.1', 4, 16777217n],
    ['::ffff:1.0.0.1', 4, 16777217n],
    ['2001:200::', 6, 42540528726795050063891204319802818560n],
    ['::1', 6, 1n],
    ['2001:db8::1.2.3.4', 6, (0x20010db8n << 96n) | 0x01020304n],
  ] as const)('%s', (ip, family, value) => {
    expect(ipNumber(ip)).toMatchObject({ family, value });
  });

  it('refuses what is not an address', () => {
    expect(ipNumber('example.com')).toBeUndefined();
    expect(ipNumber('1.2.3')).toBeUndefined();
  });
});

describe('egress verify: ASN ranges', () => {
  const file = Buffer.from(
    ['10,19,100,Plain Org', '20,29,200,"Quoted, Inc."', '40,49,400,"Say ""hi"" Ltd"', '50,50,500,Last'].join('\n') +
      '\n',
  );
  it.each([
    [9n, undefined],
    [10n, { asn: 100, org: 'Plain Org' }],
    [25n, { asn: 200, org: 'Quoted, Inc.' }],
    [30n, undefined],
    [49n, { asn: 400, org: 'Say "hi" Ltd' }],
    [50n, { asn: 500, org: 'Last' }],
    [51n, undefined],
  ])('finds %s', (value, expected) => {
    const found = findRange(file, value);
    if (expected) expect(found).toMatchObject(expected);
    else expect(found).toBeUndefined();
  });

  it('finds nothing in an empty file', () => {
    expect(findRange(Buffer.alloc(0), 1n)).toBeUndefined();
  });
});

describe('egress verify: the packaged database', () => {
  const db = openEgressDatabase();

  it('locates public addresses of both families', () => {
    expect(db.locate('8.8.8.8')).toEqual({ country: 'US', asn: 15169, asnOrg: 'Google LLC' });
    expect(db.locate('::ffff:8.8.8.8')).toEqual(db.locate('8.8.8.8'));
    expect(db.locate('2001:4860:4860::8888')).toMatchObject({ country: 'US', asn: 15169 });
  });

  it('has nothing for loopback and documentation addresses', () => {
    for (const ip of ['127.0.0.1', '10.1.2.3', '192.0.2.1', 'not-an-ip'])
      expect(db.locate(ip)).toEqual({ country: undefined, asn: undefined, asnOrg: undefined });
  });

  it('states the release of each data package', () => {
    expect(EGRESS_DATABASE.country).toMatchObject({ package: '@ip-location-db/geo-whois-asn-country-mmdb' });
    expect(EGRESS_DATABASE.asn.publishedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:00:00Z$/);
  });
});
