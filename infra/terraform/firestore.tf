# Firestore: the (default) database the functions use (shared/store/firestore/client.ts), the one
# composite index the store's queries use, and TTL policies on the `expireAt` field that
# FirestoreProxyRepository.addEvent, FirestoreProxyRepository.reject (shared/store/firestore/proxies.ts)
# and FirestoreReportRepository's ban budgets (shared/store/firestore/reports.ts) write. Every other
# query is served by the automatic single-field indexes; infra/terraform/firestore-indexes.ts holds
# the rules and test/integration/store-contract.test.ts checks them against the queries the store
# issues.

resource "google_firestore_database" "default" {
  project                 = var.project
  name                    = "(default)"
  location_id             = var.firestore_location
  type                    = "FIRESTORE_NATIVE"
  concurrency_mode        = "OPTIMISTIC"
  deletion_policy         = "ABANDON"
  delete_protection_state = "DELETE_PROTECTION_ENABLED"

  depends_on = [google_project_service.apis]
}

# FirestoreProxyRepository.countReplacing: proxies where spec.provider == P and status.phase == "Replacing", counted.
# Two equality filters alone can be served by merging the single-field indexes (index merging), so
# this index is optional; it is kept because the rollout budget counts on every create, and with it
# the count reads one index range instead of joining two indexes.
# (FirestoreProxyRepository.changes, the sweep's delta read, ranges over changedAt and the document name: that is
# the automatic single-field index of changedAt, which ends with the name; Firestore refuses a
# composite (changedAt, __name__) as "not necessary".)
resource "google_firestore_index" "proxies_provider_phase" {
  project     = var.project
  database    = google_firestore_database.default.name
  collection  = "proxies"
  query_scope = "COLLECTION"

  fields {
    field_path = "spec.provider"
    order      = "ASCENDING"
  }

  fields {
    field_path = "status.phase"
    order      = "ASCENDING"
  }
}

# proxies/{name}/events/* and pools/{name}/events/*: deleted some time after expireAt (EVENT_RETENTION_MS after the event).
resource "google_firestore_field" "events_ttl" {
  project    = var.project
  database   = google_firestore_database.default.name
  collection = "events"
  field      = "expireAt"

  ttl_config {}

  # No single-field indexes on expireAt: nothing queries it.
  index_config {}
}

# rejections/{messageId}: deleted some time after expireAt (REJECTION_RETENTION_MS after the rejection).
resource "google_firestore_field" "rejections_ttl" {
  project    = var.project
  database   = google_firestore_database.default.name
  collection = "rejections"
  field      = "expireAt"

  ttl_config {}

  index_config {}
}

# banBudgets/{caller}-{hour}: a token's bans in one hour (shared/store/firestore/reports.ts), each
# written with expireAt two hours after its hour began (report-rules.ts#banBudgetExpiry); without
# this policy one document per reporting token and hour stays for ever. A TTL policy deletes a
# document some time (typically within a day) after the timestamp in its field; the field is set
# per collection group
# (https://registry.terraform.io/providers/hashicorp/google/latest/docs/resources/firestore_field,
# `ttl_config`; https://firebase.google.com/docs/firestore/ttl).
resource "google_firestore_field" "ban_budgets_ttl" {
  project    = var.project
  database   = google_firestore_database.default.name
  collection = "banBudgets"
  field      = "expireAt"

  ttl_config {}

  index_config {}
}

# poolDemand/{pool}.{gateway}: a gateway's demand and usage report, deleted some time after expireAt
# (two days after its demand expired, three report intervals after it was taken; the autoscaler
# ignores its demand from then on, and the pool controller has folded its usage: demand-rules.ts).
resource "google_firestore_field" "pool_demand_ttl" {
  project    = var.project
  database   = google_firestore_database.default.name
  collection = "poolDemand"
  field      = "expireAt"

  ttl_config {}

  index_config {}
}
