output "addresses" {
  description = "Host name -> { public_ip, private_ip } of this region's hosts."
  value       = module.cluster.addresses
}

output "instance_ids" {
  description = "Host name -> EC2 instance id."
  value       = module.cluster.instance_ids
}

output "ami_id" {
  description = "The AMI every instance of this region got (the operator's, or the Ubuntu 24.04 LTS image looked up)."
  value       = local.ami_id
}

output "security_group_id" {
  description = "ID of this region's cluster security group."
  value       = module.network.security_group_id
}

output "subnet_id" {
  description = "ID of this region's subnet."
  value       = module.network.subnet_id
}
