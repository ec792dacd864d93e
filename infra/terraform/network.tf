# The network path from the functions to the proxies: a Serverless VPC Access connector (the only
# VPC egress google_cloudfunctions2_function offers in the provider versions this is written for:
# docs/deploy.md, "Reaching the proxies"), and firewall rules that open the proxy port to the
# connector's range and the clients' ranges only.

locals {
  # gcp providers of the config, with the defaults of shared/providers/gcp/options.ts.
  gcp_providers = {
    for p in local.config.providers : p.name => {
      project = try(p.options.project, var.project)
      network = try(p.options.network, local.gcp_option_defaults.network)
      tags    = try(p.options.tags, local.gcp_option_defaults.tags)
      port    = try(p.options.proxyPort, local.gcp_option_defaults.proxy_port)
    } if p.type == "gcp"
  }

  # The functions probe the instances of every provider that is not relay-backed (gcp VMs at their
  # internal address, kubernetes Pods at their Pod IP): both live inside a VPC.
  vpc_probed = length([for p in local.config.providers : p if !contains(local.relay_types, p.type)]) > 0

  # Where the connector's traffic comes from, as the proxies' firewall sees it.
  functions_range = var.vpc_connector.ip_cidr_range

  # The ports of the kubernetes providers' Pods (options.port, else the schema's default).
  kubernetes_ports = distinct([
    for p in local.config.providers : tostring(try(p.options.port, local.kubernetes_option_defaults.port))
    if p.type == "kubernetes"
  ])
}

resource "google_vpc_access_connector" "functions" {
  count         = local.vpc_probed ? 1 : 0
  project       = var.project
  region        = var.region
  name          = "${var.name_prefix}connector"
  network       = var.vpc_connector.network
  ip_cidr_range = local.functions_range
  min_instances = 2
  max_instances = 3

  depends_on = [google_project_service.apis]
}

resource "google_compute_firewall" "proxy" {
  for_each      = local.gcp_providers
  project       = each.value.project
  name          = "${var.name_prefix}proxy-${each.key}"
  network       = each.value.network
  direction     = "INGRESS"
  source_ranges = distinct(concat([local.functions_range], var.proxy_source_ranges))
  target_tags   = each.value.tags

  allow {
    protocol = "tcp"
    # Each proxy port and its TLS listener's, the next one (shared/providers/stunnel.ts guestTlsPort).
    ports = distinct(flatten([for p in concat([tostring(each.value.port)], var.proxy_extra_ports) : [p, tostring(tonumber(p) + 1)]]))
  }

  depends_on = [google_project_service.apis]
}

# Pod IPs are reachable only inside the VPC: the functions' probes reach them through the connector.
resource "google_compute_firewall" "pods" {
  count              = length(var.kubernetes_pod_ranges) > 0 && length(local.kubernetes_ports) > 0 ? 1 : 0
  project            = var.project
  name               = "${var.name_prefix}pods"
  network            = var.vpc_connector.network
  direction          = "INGRESS"
  source_ranges      = [local.functions_range]
  destination_ranges = var.kubernetes_pod_ranges

  allow {
    protocol = "tcp"
    # Each proxy port and its TLS listener's, the next one (shared/providers/kubernetes/manifests.ts podManifest).
    ports = distinct(flatten([for p in concat(local.kubernetes_ports, var.proxy_extra_ports) : [p, tostring(tonumber(p) + 1)]]))
  }

  depends_on = [google_project_service.apis]
}
