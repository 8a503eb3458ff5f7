output "vpc_id" {
  description = "ID of the VPC."
  value       = aws_vpc.this.id
}

output "subnet_id" {
  description = "ID of the single subnet."
  value       = aws_subnet.this.id
}

output "security_group_id" {
  description = "ID of the cluster security group (attach to every instance)."
  value       = aws_security_group.cluster.id
}

output "vpc_cidr" {
  description = "CIDR of the VPC."
  value       = aws_vpc.this.cidr_block
}
