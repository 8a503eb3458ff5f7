output "addresses" {
  description = "Host name -> { public_ip, private_ip }, the input of the inventory module."
  value = {
    for name, inst in aws_instance.host : name => {
      public_ip  = inst.public_ip
      private_ip = inst.private_ip
    }
  }
}

output "instance_ids" {
  description = "Host name -> EC2 instance id."
  value       = { for name, inst in aws_instance.host : name => inst.id }
}

output "key_name" {
  description = "Name of the aws_key_pair."
  value       = aws_key_pair.this.key_name
}
