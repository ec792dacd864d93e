/**
 * The country of each Compute Engine region, from Google's list of regions and their locations
 * (https://cloud.google.com/compute/docs/regions-zones, "Available regions and zones"). A region
 * missing here (a new one) has no expected country: its proxies are located but not verified
 * until it is added.
 */
export const GCE_REGION_COUNTRIES: Readonly<Record<string, string>> = Object.freeze({
  'africa-south1': 'ZA', // Johannesburg
  'asia-east1': 'TW', // Changhua County
  'asia-east2': 'HK', // Hong Kong
  'asia-northeast1': 'JP', // Tokyo
  'asia-northeast2': 'JP', // Osaka
  'asia-northeast3': 'KR', // Seoul
  'asia-south1': 'IN', // Mumbai
  'asia-south2': 'IN', // Delhi
  'asia-southeast1': 'SG', // Jurong West
  'asia-southeast2': 'ID', // Jakarta
  'australia-southeast1': 'AU', // Sydney
  'australia-southeast2': 'AU', // Melbourne
  'europe-central2': 'PL', // Warsaw
  'europe-north1': 'FI', // Hamina
  'europe-north2': 'SE', // Stockholm
  'europe-southwest1': 'ES', // Madrid
  'europe-west1': 'BE', // St. Ghislain
  'europe-west2': 'GB', // London
  'europe-west3': 'DE', // Frankfurt
  'europe-west4': 'NL', // Eemshaven
  'europe-west6': 'CH', // Zurich
  'europe-west8': 'IT', // Milan
  'europe-west9': 'FR', // Paris
  'europe-west10': 'DE', // Berlin
  'europe-west12': 'IT', // Turin
  'me-central1': 'QA', // Doha
  'me-central2': 'SA', // Dammam
  'me-west1': 'IL', // Tel Aviv
  'northamerica-northeast1': 'CA', // Montréal
  'northamerica-northeast2': 'CA', // Toronto
  'northamerica-south1': 'MX', // Querétaro
  'southamerica-east1': 'BR', // Osasco (São Paulo)
  'southamerica-west1': 'CL', // Santiago
  'us-central1': 'US', // Council Bluffs, Iowa
  'us-east1': 'US', // Moncks Corner, South Carolina
  'us-east4': 'US', // Ashburn, Virginia
  'us-east5': 'US', // Columbus, Ohio
  'us-south1': 'US', // Dallas, Texas
  'us-west1': 'US', // The Dalles, Oregon
  'us-west2': 'US', // Los Angeles, California
  'us-west3': 'US', // Salt Lake City, Utah
  'us-west4': 'US', // Las Vegas, Nevada
});
