variable "name" {
  description = "Name prefix of every resource of this region (network and cluster)."
  type        = string
}

variable "hosts" {
  description = "The hosts to create in this region: the topology module's `hosts_by_name` output, or the part of it in this region."
  type = map(object({
    name          = string
    role          = string
    index         = number
    instance_type = string
    region        = string
  }))
}

variable "vpc_cidr" {
  description = "CIDR of this region's VPC; the subnet is its second /24-sized block (cidrsubnet(vpc_cidr, 8, 1)). Geo topologies give every region a distinct range."
  type        = string
  default     = "10.42.0.0/16"
}

variable "availability_zone" {
  description = "Availability zone of the subnet (and so of the placement group)."
  type        = string
}

variable "operator_cidrs" {
  description = "The operator's address(es) as CIDRs; 0.0.0.0/0 is refused by the network module."
  type        = list(string)
}

variable "peer_cidrs" {
  description = "Host name -> CIDR of the hosts in other regions admitted on every port (geo topologies); empty for a single region."
  type        = map(string)
  default     = {}
}

variable "ssh_public_key" {
  description = "OpenSSH public key text installed on every host (one aws_key_pair per region)."
  type        = string
}

variable "ami_id" {
  description = "AMI id in this region (AMI ids differ between regions); null: the newest Ubuntu 24.04 LTS image Canonical publishes here (data source aws_ami.lts)."
  type        = string
  default     = null
}

variable "placement_strategy" {
  description = "Placement group strategy (cluster by default); null for no placement group, as in geo topologies with one or two hosts per region."
  type        = string
  default     = "cluster"
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
