// Every suite, and every server and worker it starts, runs with the egress gate looking up no name: tests send no
// traffic past loopback, DNS queries included (docs/security.md#egress).
process.env.EGRESS_DNS ??= 'off';
