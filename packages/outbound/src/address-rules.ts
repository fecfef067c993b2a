import { BlockList, isIP } from 'node:net';

/**
 * Which addresses a call to a tenant-given URL may reach.
 *
 * Two lists: cloud metadata services, refused always (they hand out the
 * host's credentials); and loopback, private, link-local, shared, multicast
 * and reserved ranges, refused unless the operator allows private addresses
 * (tests, a private deployment). An IPv4 address written as IPv6
 * (`::ffff:10.0.0.1`, NAT64 `64:ff9b::a00:1`) is judged as the IPv4 it
 * carries.
 */

const METADATA = new BlockList();
for (const address of [
  '169.254.169.254', // AWS, GCP, Azure, OpenStack, DigitalOcean...
  '169.254.170.2', // AWS ECS task credentials
  '169.254.170.23', // AWS EKS pod identity
  '100.100.100.200', // Alibaba Cloud
  '192.0.0.192', // Oracle Cloud
  '168.63.129.16', // Azure wire server
]) {
  METADATA.addAddress(address, 'ipv4');
}
METADATA.addAddress('fd00:ec2::254', 'ipv6'); // AWS over IPv6
METADATA.addAddress('fd00:ec2::23', 'ipv6'); // AWS EKS pod identity over IPv6

const PRIVATE = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // shared (carrier-grade NAT)
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and the broadcast address
] as const) {
  PRIVATE.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
  ['2001:db8::', 32], // documentation
] as const) {
  PRIVATE.addSubnet(network, prefix, 'ipv6');
}

/** The IPv4 address an IPv6 one carries (IPv4-mapped, IPv4-compatible or NAT64), if any. */
function embeddedIpv4(address: string): string | undefined {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|::|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted?.[1]) return dotted[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (!hex?.[1] || !hex[2]) return undefined;
  const high = Number.parseInt(hex[1], 16);
  const low = Number.parseInt(hex[2], 16);
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}

/**
 * Why a call may not reach `address` (an IP address, without brackets), or
 * undefined when it may. Something that is not an IP address is refused.
 */
export function refusedAddress(address: string, options: { allowPrivate: boolean }): string | undefined {
  const family = isIP(address);
  if (family === 0) return `${JSON.stringify(address)} is not an IP address`;
  const v4 = family === 6 ? embeddedIpv4(address) : address;
  const [checked, type] = v4 ? [v4, 'ipv4' as const] : [address, 'ipv6' as const];
  if (METADATA.check(checked, type)) return `${address} is a cloud metadata address, never allowed`;
  if (!options.allowPrivate && PRIVATE.check(checked, type)) {
    return `${address} is a loopback, private, link-local or reserved address`;
  }
  return undefined;
}
