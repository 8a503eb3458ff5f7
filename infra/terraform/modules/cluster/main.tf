resource "aws_key_pair" "this" {
  key_name   = "${var.name}-key"
  public_key = var.ssh_public_key
  tags       = var.tags
}

resource "aws_placement_group" "this" {
  count    = var.placement_strategy == null ? 0 : 1
  name     = "${var.name}-pg"
  strategy = var.placement_strategy
  tags     = var.tags
}

resource "aws_instance" "host" {
  for_each = var.hosts

  ami                    = var.ami_id
  instance_type          = each.value.instance_type
  subnet_id              = var.subnet_id
  vpc_security_group_ids = [var.security_group_id]
  key_name               = aws_key_pair.this.key_name
  placement_group        = var.placement_strategy == null ? null : aws_placement_group.this[0].id

  # Dedicated tenancy is not needed; what matters for the papers' numbers is
  # no CPU credit throttling, which the fixed-performance families (c5/m5/m4)
  # the systems use never have.
  root_block_device {
    volume_size = var.root_volume_gb
    volume_type = var.root_volume_type
  }

  # What the roles run on the hosts beyond the commands they copy: a Java
  # runtime (Kafka, ZooKeeper, BFT-SMaRt) and node-exporter, installed by
  # cloud-init at first boot; the preflight waits for cloud-init to finish.
  user_data = "#cloud-config\n${yamlencode({ package_update = true, packages = var.packages })}"

  tags = merge(var.tags, {
    Name  = "${var.name}-${each.key}"
    Role  = each.value.role
    Host  = each.key
    Index = tostring(each.value.index)
  })
}
