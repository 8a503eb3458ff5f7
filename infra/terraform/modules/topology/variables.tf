variable "roles" {
  description = "A paper's topology: role name -> number of hosts of that role, e.g. { orderer = 1, kafka = 3 }. Role names become Ansible group names, so they must be lower-case identifiers."
  type        = map(number)

  validation {
    condition     = alltrue([for r, n in var.roles : can(regex("^[a-z][a-z0-9_]*$", r))])
    error_message = "Role names must match ^[a-z][a-z0-9_]*$ (they become Ansible group names)."
  }

  validation {
    condition     = alltrue([for r, n in var.roles : n >= 0 && floor(n) == n])
    error_message = "Every role count must be a non-negative whole number."
  }
}

variable "instance_types" {
  description = "Instance type per role; roles missing here get default_instance_type."
  type        = map(string)
  default     = {}
}

variable "default_instance_type" {
  description = "Instance type for roles without an entry in instance_types."
  type        = string
}

variable "regions" {
  description = "Optional region per host name (e.g. { \"bftsmart_node-0\" = \"us-west-2\" }) for geo-distributed topologies; hosts without an entry get default_region."
  type        = map(string)
  default     = {}
}

variable "role_regions" {
  description = "Optional region per role (e.g. { oregon = \"us-west-2\" }) for geo-distributed topologies whose roles are places; a host's entry in regions comes first, then its role's, then default_region."
  type        = map(string)
  default     = {}
}

variable "default_region" {
  description = "Region of hosts without an entry in regions."
  type        = string
  default     = ""
}
