# The proxy port of every gcp provider's VMs, open to the configured source ranges only, and the
# optional Serverless VPC Access connector for the functions that reach providers.

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
}

resource "google_compute_firewall" "proxy" {
  for_each      = local.gcp_providers
  project       = each.value.project
  name          = "${var.name_prefix}proxy-${each.key}"
  network       = each.value.network
  direction     = "INGRESS"
  source_ranges = var.proxy_source_ranges
  target_tags   = each.value.tags

  allow {
    protocol = "tcp"
    ports    = distinct(concat([tostring(each.value.port)], var.proxy_extra_ports))
  }

  depends_on = [google_project_service.apis]
}

resource "google_vpc_access_connector" "functions" {
  count         = var.vpc_connector == null ? 0 : 1
  project       = var.project
  region        = var.region
  name          = "${var.name_prefix}connector"
  network       = var.vpc_connector.network
  ip_cidr_range = var.vpc_connector.ip_cidr_range
  min_instances = 2
  max_instances = 3

  depends_on = [google_project_service.apis]
}
