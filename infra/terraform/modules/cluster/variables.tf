variable "name" {
  description = "Name prefix for the placement group, key pair and instance Name tags."
  type        = string
}

variable "hosts" {
  description = "The topology module's `hosts_by_name` output: host name -> { name, role, index, instance_type, region }. One aws_instance is created per entry."
  type = map(object({
    name          = string
    role          = string
    index         = number
    instance_type = string
    region        = string
  }))
}

variable "subnet_id" {
  description = "Subnet for every instance (from the network module)."
  type        = string
}

variable "security_group_id" {
  description = "Security group for every instance (from the network module)."
  type        = string
}

variable "ssh_public_key" {
  description = "OpenSSH public key text installed for the login user via an aws_key_pair."
  type        = string
}

variable "ami_id" {
  description = "AMI for every instance (the region module passes the operator's or the Ubuntu 24.04 LTS image it looked up, and outputs which, so a run records exactly the image it used)."
  type        = string
}

variable "placement_strategy" {
  description = "Placement group strategy. cluster = one rack-local low-latency group, closest to the papers' single switch. Set null to skip the placement group (geo topologies, or instance types that do not support it)."
  type        = string
  default     = "cluster"

  validation {
    condition     = var.placement_strategy == null || contains(["cluster", "spread", "partition"], coalesce(var.placement_strategy, "cluster"))
    error_message = "placement_strategy must be cluster, spread, partition or null."
  }
}

variable "packages" {
  description = "Debian packages cloud-init installs at first boot: the Java runtime the harness is tested with (17: Kafka, ZooKeeper and BFT-SMaRt run on it) and prometheus-node-exporter (whose service the ssh provider then reuses)."
  type        = list(string)
  default     = ["openjdk-17-jre-headless", "prometheus-node-exporter"]
}

variable "root_volume_gb" {
  description = "Root volume size in GiB (Go toolchains, sources, ledgers, Kafka logs)."
  type        = number
  default     = 100
}

variable "root_volume_type" {
  description = "EBS type of the root volume. gp3 gives a flat 3000 IOPS baseline, comparable to the papers' local disks at their write rates."
  type        = string
  default     = "gp3"
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
