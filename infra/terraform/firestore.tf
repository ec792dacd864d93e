# Firestore: the (default) database the functions use (shared/store/firestore.ts), the composite
# indexes of the rollout-budget count and of the sweep's changes query, and TTL policies on the `expireAt` field that
# ProxyStore.addEvent and ProxyStore.reject write (shared/store/proxies.ts).

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

# ProxyStore.countReplacing: proxies where spec.provider == P and status.phase == "Replacing", counted.
# Two equality filters can be served by merging single-field indexes; this index makes the count
# read one index range instead.
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

# ProxyStore.changes (the warm sweep's delta read, shared/reconcile/sweep-cache.ts): proxies in a
# name range written since a time, i.e. inequalities on changedAt and on the document id. A query
# with range filters on two fields needs a composite index; the emulator does not ask for one, so
# this is declared from the documentation, not from a real project's error. Until it is built the
# changes query fails and each sweep page is read whole (logged), never the sweep itself.
resource "google_firestore_index" "proxies_changed_at" {
  project     = var.project
  database    = google_firestore_database.default.name
  collection  = "proxies"
  query_scope = "COLLECTION"

  fields {
    field_path = "changedAt"
    order      = "ASCENDING"
  }

  fields {
    field_path = "__name__"
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
