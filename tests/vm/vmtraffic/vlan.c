// SPDX-License-Identifier: GPL-2.0-only
/* vmtraffic vlan: UDP datagrams in VLAN tags that stay in the packet,
 * written as Ethernet frames on lo by a packet socket. */
#include "vmtraffic.h"

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint16_t ip_sum(const uint8_t *b, size_t len) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < len; i += 2)
    sum += (uint32_t)(b[i] << 8 | b[i + 1]);
  while (sum >> 16)
    sum = (sum & 0xFFFF) + (sum >> 16);
  return (uint16_t)~sum;
}

static size_t put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
  return 2;
}

/* The frame: lo's MAC addresses (all 0), each tag of tags ("8100" or
 * "88a8,8100": protocols from the outside in) with TCI 0 (VLAN 0, which
 * the kernel takes out without a VLAN device), an IPv4 header and a UDP
 * one (no checksum: allowed over IPv4) from sport to port, 64 bytes. */
static size_t vlan_frame(uint8_t *f, const char *tags, int sport, int port) {
  size_t o = 12;
  memset(f, 0, 128);
  for (const char *t = tags; *t;) {
    char *end;
    o += put16(f + o, (uint16_t)strtoul(t, &end, 16));
    o += put16(f + o, 0);
    t = *end == ',' ? end + 1 : end;
  }
  o += put16(f + o, 0x0800);
  uint8_t *ip = f + o;
  ip[0] = 0x45;
  put16(ip + 2, 20 + 8 + 64);
  put16(ip + 6, 0x4000); /* DF */
  ip[8] = 64;
  ip[9] = IPPROTO_UDP;
  ip[12] = ip[16] = 127;
  ip[15] = 2; /* from 127.0.0.2: a local source would be martian */
  ip[19] = 1;
  put16(ip + 10, ip_sum(ip, 20));
  put16(ip + 20, (uint16_t)sport);
  put16(ip + 22, (uint16_t)port);
  put16(ip + 24, 8 + 64);
  memset(ip + 28, 'v', 64);
  return o + 20 + 8 + 64;
}

/* lo's route_localnet: a packet that arrives on lo without a route of
 * its own (not sent by this host's IP layer) to 127.0.0.1 is a martian
 * without it. Returns the value before ('0' or '1'). */
static char route_localnet(char v) {
  const char *path = "/proc/sys/net/ipv4/conf/lo/route_localnet";
  char old = '0';
  FILE *f = fopen(path, "r+");
  if (!f)
    die(path);
  if (fread(&old, 1, 1, f) != 1 || fseek(f, 0, SEEK_SET) ||
      fputc(v, f) == EOF || fclose(f))
    die(path);
  return old;
}

/* vmtraffic vlan PORT N TAGS */
int vlan(int port, int n, const char *tags) {
  struct sockaddr_storage ss;
  socklen_t sl = make_addr("127.0.0.1", port, &ss);
  int rx = socket(AF_INET, SOCK_DGRAM, 0);
  if (rx < 0 || bind(rx, (struct sockaddr *)&ss, sl))
    die("vlan receiver");
  struct sockaddr_ll ll = {.sll_family = AF_PACKET,
                           .sll_ifindex = (int)if_nametoindex("lo")};
  int tx = socket(AF_PACKET, SOCK_RAW, 0);
  if (tx < 0 || bind(tx, (struct sockaddr *)&ll, sizeof(ll)))
    die("packet socket on lo");
  uint8_t frame[128], buf[128];
  size_t len = vlan_frame(frame, tags, port + 1, port);
  int got = 0;
  char localnet = route_localnet('1');
  for (int i = 0; i < n; i++) {
    if (send(tx, frame, len, 0) != (ssize_t)len)
      die("send");
    if (wait_readable(rx, 10000) != 1)
      break;
    if (recv(rx, buf, sizeof(buf), 0) == 64)
      got++;
  }
  route_localnet(localnet);
  close(tx);
  close(rx);
  printf("vlan %s sent %d received %d\n", tags, n, got);
  return got == n ? 0 : 1;
}
