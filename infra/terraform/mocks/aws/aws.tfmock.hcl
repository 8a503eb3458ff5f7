# The mock aws provider of the single-region tests (modules/environment and
# roots/single-region): every instance at one documentation address
# (RFC 5737) and one private address, and the image lookup finding one image.
# bftsmart-geo's mocks differ per region, so they stay in its test.

mock_resource "aws_instance" {
  defaults = {
    public_ip  = "198.51.100.7"
    private_ip = "10.42.1.7"
  }
}

mock_data "aws_ami" {
  defaults = {
    id = "ami-0lookedup00000001"
  }
}
