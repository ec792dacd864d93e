# Inputs of the deployment. Topics, subscriptions and schedules are not inputs: they come from
# infra/topology.yaml through topology.auto.tf.json.

variable "project" {
  description = "Google Cloud project id that holds the functions, Pub/Sub, Firestore and the secrets."
  type        = string
}

variable "region" {
  description = "Region of the functions, the scheduler jobs and the optional VPC connector."
  type        = string
  default     = "us-central1"
}

variable "installation_id" {
  description = "This installation's id (EGRESS_INSTALLATION): instances carry it and GC touches only its own. Must equal the relays' installationId."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.installation_id))
    error_message = "installation_id must be a DNS-1123 label (lowercase letters, digits and '-', at most 63 characters)."
  }
}

variable "config_file" {
  description = "The providers config (YAML, schema in shared/config/schema.ts). Stored in Secret Manager and mounted into every function as EGRESS_CONFIG."
  type        = string
}

variable "firestore_location" {
  description = "Location of the (default) Firestore database, e.g. nam5 or eur3. Cannot change once created."
  type        = string
  default     = "nam5"
}

variable "name_prefix" {
  description = "Prefix of the function and service-account names."
  type        = string
  default     = "egress-"
}

variable "dist_dir" {
  description = "Directory `npm run build` wrote (holds functions/<name>/). Default: dist/ at the repository root."
  type        = string
  default     = null
}

variable "function_scaling" {
  description = "Instance limits per function name; functions not listed get min 0, max 10."
  type = map(object({
    min = number
    max = number
  }))
  default = {
    check = { min = 0, max = 20 }
    api   = { min = 0, max = 5 }
  }
}

variable "pushed_ingress" {
  description = "Ingress of the Pub/Sub-pushed functions. IAM is the gate either way (only the pubsub-push account may invoke them); ALLOW_INTERNAL_ONLY also closes the network path."
  type        = string
  default     = "ALLOW_ALL"

  validation {
    condition     = contains(["ALLOW_ALL", "ALLOW_INTERNAL_ONLY"], var.pushed_ingress)
    error_message = "pushed_ingress must be ALLOW_ALL or ALLOW_INTERNAL_ONLY."
  }
}

variable "api_public" {
  description = "Grant roles/run.invoker on the api function to allUsers (it still checks its own bearer tokens). Off by default: an organisation with Domain Restricted Sharing (iam.allowedPolicyMemberDomains) refuses allUsers; see docs/deploy.md."
  type        = bool
  default     = false
}

variable "api_invokers" {
  description = "Members granted roles/run.invoker on the api function: the people, groups and service accounts (the gateway's host identity among them) whose Google ID token Cloud Run admits, e.g. [\"group:egress-users@example.com\", \"serviceAccount:gateway@my-project.iam.gserviceaccount.com\"]."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for m in var.api_invokers : can(regex("^(user|group|serviceAccount|domain):[^\\s:]+$|^principal(Set)?://\\S+$", m))])
    error_message = "api_invokers: each member must be user:EMAIL, group:EMAIL, serviceAccount:EMAIL, domain:DOMAIN or a principal:// / principalSet:// identifier (allUsers and allAuthenticatedUsers are api_public's)."
  }
}

variable "api_tokens" {
  description = "More bearer tokens the API accepts besides the two Terraform generates, each \"scope:token\" (scope discover, read or admin) or a bare token (admin); the token at least 16 characters."
  type        = list(string)
  default     = []
  sensitive   = true

  validation {
    condition = alltrue([for t in var.api_tokens : !strcontains(t, ",") && (
      can(regex("^(discover|read|admin):.{16,}$", t)) || (!strcontains(t, ":") && length(t) >= 16)
    )])
    error_message = "Each API token must be \"scope:token\" (scope discover, read or admin) or a bare token without \":\", the token at least 16 characters long and without a comma."
  }
}

variable "relay_keys" {
  description = "Relay HMAC keys by relay id, replacing the generated one: [{id, secret (base64, >= 32 bytes)}], the signing key first (rotation: docs/operations.md)."
  type        = map(list(object({ id = string, secret = string })))
  default     = {}
  sensitive   = true
}

variable "provider_secret_files" {
  description = "Provider credentials: secret name => local file. Each is stored in Secret Manager and mounted into check, gc and health at /etc/egress-secrets/<name>/value (name that path in the config, e.g. a gcp provider's options.keyFile)."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for name in keys(var.provider_secret_files) : can(regex("^[a-z][-a-z0-9]{0,40}$", name))])
    error_message = "Secret names must be lowercase letters, digits and '-', starting with a letter, at most 41 characters."
  }
}

variable "proxy_source_ranges" {
  description = "Your clients' CIDR ranges, allowed to reach the proxy port of gcp-provider VMs. The functions' probes need none: they come from vpc_connector.ip_cidr_range, which the firewall admits as well (docs/deploy.md)."
  type        = list(string)

  validation {
    condition     = length(var.proxy_source_ranges) > 0 && alltrue([for r in var.proxy_source_ranges : can(cidrhost(r, 0))])
    error_message = "proxy_source_ranges must list at least one CIDR range."
  }
}

variable "proxy_extra_ports" {
  description = "Ports opened beside each gcp provider's proxyPort, for proxies whose spec.port names one (e.g. [\"8443\"])."
  type        = list(string)
  default     = []
}

variable "vpc_connector" {
  description = "The Serverless VPC Access connector through which requests, check, gc and health reach the gcp VMs' internal addresses and Pod IPs; created whenever the config has a gcp or kubernetes provider. network: the VPC of the VMs (and the cluster); ip_cidr_range: an unused /28 in it, admitted by the proxy firewall; egress: PRIVATE_RANGES_ONLY keeps the functions' other traffic as it is."
  type = object({
    network       = optional(string, "default")
    ip_cidr_range = optional(string, "10.8.0.0/28")
    egress        = optional(string, "PRIVATE_RANGES_ONLY")
  })
  default  = {}
  nullable = false

  validation {
    condition     = can(cidrhost(var.vpc_connector.ip_cidr_range, 0)) && endswith(var.vpc_connector.ip_cidr_range, "/28")
    error_message = "vpc_connector.ip_cidr_range must be a /28 CIDR range (what a Serverless VPC Access connector takes)."
  }

  validation {
    condition     = contains(["PRIVATE_RANGES_ONLY", "ALL_TRAFFIC"], var.vpc_connector.egress)
    error_message = "vpc_connector.egress must be PRIVATE_RANGES_ONLY or ALL_TRAFFIC."
  }
}

variable "kubernetes_pod_ranges" {
  description = "Pod CIDR ranges of the GKE clusters kubernetes providers use, in vpc_connector.network: a firewall rule admits the connector's range to the proxy ports there (Pod IPs are reachable only inside the VPC). Empty: no rule (a cluster in another network needs its own)."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for r in var.kubernetes_pod_ranges : can(cidrhost(r, 0))])
    error_message = "kubernetes_pod_ranges must list CIDR ranges."
  }
}

variable "telemetry" {
  description = "EGRESS_TELEMETRY of the functions: gcp (Cloud Trace and Cloud Monitoring) or none."
  type        = string
  default     = "gcp"

  validation {
    condition     = contains(["gcp", "none"], var.telemetry)
    error_message = "telemetry must be gcp or none."
  }
}

variable "function_memory_mb" {
  description = "Memory per function name, overriding infra/topology.yaml (e.g. 1024 for check with large sweep pages)."
  type        = map(number)
  default     = {}
}

variable "trace_sample_ratio" {
  description = "EGRESS_TRACE_SAMPLE_RATIO: share of new traces recorded (0 to 1)."
  type        = number
  default     = 0.1
}

variable "kubernetes_cluster_projects" {
  description = "Projects of the GKE clusters kubernetes providers use in gke mode: check, gc and health get roles/container.clusterViewer there."
  type        = list(string)
  default     = []
}

variable "echo" {
  description = "The echo VM the probes fetch through every proxy (echo.tf): zone (default: the region's first), machine type and network. null: none; the config's own echoUrl is used."
  type = object({
    zone         = optional(string)
    machine_type = optional(string, "e2-micro")
    network      = optional(string, "default")
  })
  default = {}
}
