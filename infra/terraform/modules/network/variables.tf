variable "name" {
  description = "Name prefix for every resource (e.g. repro-fastfabric); also the Name tag."
  type        = string
}

variable "vpc_cidr" {
  description = "CIDR of the VPC. One subnet of the same size is carved from it."
  type        = string
  default     = "10.42.0.0/16"
}

variable "subnet_cidr" {
  description = "CIDR of the single subnet all hosts share (one subnet keeps every host in one placement group and one AZ)."
  type        = string
  default     = "10.42.1.0/24"
}

variable "availability_zone" {
  description = "Availability zone of the subnet. Cluster placement groups live in one AZ, so this pins it."
  type        = string
}

variable "operator_cidrs" {
  description = "CIDRs allowed to reach the hosts (SSH, Prometheus, node-exporter). Normally the operator's own address as x.x.x.x/32. 0.0.0.0/0 is refused."
  type        = list(string)

  validation {
    condition     = length(var.operator_cidrs) > 0 && alltrue([for c in var.operator_cidrs : c != "0.0.0.0/0" && can(cidrhost(c, 0))])
    error_message = "operator_cidrs must be a non-empty list of valid CIDRs, and must not contain 0.0.0.0/0."
  }
}

variable "operator_ports" {
  description = "TCP ports the operator may reach from operator_cidrs: 22 for Ansible, 9100 for node-exporter scrapes from the operator's Prometheus."
  type        = list(number)
  default     = [22, 9100]
}

variable "peer_cidrs" {
  description = "Label -> CIDR of each outside host allowed to reach this group on every port (geo topologies, where replicas in other regions talk over public addresses: host name -> \"<public ip>/32\"). A map, not a list, so that the rules are keyed by labels known at plan time while the addresses are known only after apply. Empty for single-region clusters."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for c in values(var.peer_cidrs) : c != "0.0.0.0/0"])
    error_message = "peer_cidrs must not contain 0.0.0.0/0."
  }
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
