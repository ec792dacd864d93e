# What the functions that call providers (check, gc, health) may do in the providers' own projects.

locals {
  # The Compute Engine calls of shared/providers/gcp/ (compute.ts, operations.ts, resources.ts).
  gcp_provider_permissions = [
    "compute.disks.create",
    "compute.globalOperations.list",
    "compute.images.get",
    "compute.images.getFromFamily",
    "compute.images.useReadOnly",
    "compute.instances.create",
    "compute.instances.delete",
    "compute.instances.get",
    "compute.instances.getGuestAttributes",
    "compute.instances.list",
    "compute.instances.setLabels",
    "compute.instances.setMetadata",
    "compute.instances.setTags",
    "compute.machineTypes.get",
    "compute.networks.use",
    "compute.networks.useExternalIp",
    "compute.subnetworks.use",
    "compute.subnetworks.useExternalIp",
    "compute.zoneOperations.delete",
    "compute.zoneOperations.get",
    "compute.zones.get",
  ]

  gcp_provider_projects = toset([for p in values(local.gcp_providers) : p.project])

  gcp_provider_grants = {
    for pair in setproduct(local.gcp_provider_projects, tolist(local.provider_functions)) :
    "${pair[0]}/${pair[1]}" => { project = pair[0], function = pair[1] }
  }

  kubernetes_grants = {
    for pair in setproduct(toset(var.kubernetes_cluster_projects), tolist(local.provider_functions)) :
    "${pair[0]}/${pair[1]}" => { project = pair[0], function = pair[1] }
  }
}

resource "google_project_iam_custom_role" "gcp_provider" {
  for_each    = local.gcp_provider_projects
  project     = each.key
  role_id     = "${replace(var.name_prefix, "-", "_")}gcp_provider"
  title       = "egress-fleet gcp provider"
  description = "Create, observe and delete egress proxy VMs (shared/providers/gcp)."
  permissions = local.gcp_provider_permissions

  depends_on = [google_project_service.apis]
}

resource "google_project_iam_member" "gcp_provider" {
  for_each = local.gcp_provider_grants
  project  = each.value.project
  role     = google_project_iam_custom_role.gcp_provider[each.value.project].id
  member   = "serviceAccount:${google_service_account.fn[each.value.function].email}"
}

# kubernetes providers in gke mode call the cluster with the function's own identity; the cluster's
# RBAC (infra/kubernetes/rbac.yaml) decides what it may do there.
resource "google_project_iam_member" "kubernetes_cluster_viewer" {
  for_each = local.kubernetes_grants
  project  = each.value.project
  role     = "roles/container.clusterViewer"
  member   = "serviceAccount:${google_service_account.fn[each.value.function].email}"
}
