// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "decision.h"
#include "util.h"

static const char *const hook_names[SL_HOOK_MAX] = {
	[SL_HOOK_NONE] = "none",
	[SL_HOOK_CONNECT4] = "connect4",
	[SL_HOOK_CONNECT6] = "connect6",
	[SL_HOOK_SENDMSG4] = "sendmsg4",
	[SL_HOOK_SENDMSG6] = "sendmsg6",
	[SL_HOOK_EGRESS] = "egress",
	[SL_HOOK_TC] = "tc",
	[SL_HOOK_LSM] = "lsm",
	[SL_HOOK_SOCK_CREATE] = "sock_create",
	[SL_HOOK_SETSOCKOPT] = "setsockopt",
	[SL_HOOK_SOCK_RELEASE] = "sock_release",
	[SL_HOOK_SECCOMP] = "seccomp",
};

static const char *const reason_names[] = {
	[SL_REASON_RULE] = "rule",
	[SL_REASON_DEFAULT_ALLOW] = "default_allow",
	[SL_REASON_DEFAULT_DENY] = "default_deny",
	[SL_REASON_BLACKHOLE] = "blackhole",
	[SL_REASON_PROTOCOL] = "unclassified_protocol",
	[SL_REASON_DNS_REDIRECT] = "dns_redirect",
	[SL_REASON_SNI_OK] = "sni_ok",
	[SL_REASON_SNI_MISMATCH] = "sni_mismatch",
	[SL_REASON_SNI_MISSING] = "sni_missing",
	[SL_REASON_SNI_UNPARSEABLE] = "sni_unparseable",
	[SL_REASON_SOCKET_KIND] = "socket_kind",
	[SL_REASON_SOURCE_ROUTE] = "source_route",
	[SL_REASON_V4_RELAY] = "ipv4_relay",
	[SL_REASON_HOST_CAP] = "host_total_cap",
	[SL_REASON_UNRECORDED] = "unrecorded",
	[SL_REASON_SOCKET_FAMILY] = "socket_family",
	[SL_REASON_LOG_UNWRITABLE] = "log_unwritable",
	[SL_REASON_PREEXISTING_UNNAMED] = "preexisting_unnamed",
	[SL_REASON_SNI_UNCHECKED] = "sni_unchecked",
	[SL_REASON_FLOW_UNREADABLE] = "flow_unreadable",
	[SL_REASON_FLOW_NO_STATE] = "flow_no_state",
	[SL_REASON_SNI_PORT] = "sni_port",
	[SL_REASON_SNI_CHANGED] = "sni_changed",
};

const char *decision_reason_name(unsigned int reason)
{
	if (reason >= sizeof(reason_names) / sizeof(reason_names[0]) || !reason_names[reason])
		return "unknown";
	return reason_names[reason];
}

const char *decision_hook_name(unsigned int hook)
{
	return hook < SL_HOOK_MAX ? hook_names[hook] : "unknown";
}

void decision_safe_comm(char *out, size_t len, const char comm[16])
{
	size_t i, w = 0;

	for (i = 0; i < 16 && comm[i]; i++) {
		unsigned char c = (unsigned char)comm[i];

		if (w + 5 >= len)
			break;
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
			out[w++] = (char)c;
		else
			w += (size_t)snprintf(out + w, len - w, "\\x%02x", c);
	}
	out[w] = '\0';
}

/* Dotted quad without inet_ntop's printf: this runs for every record. */
static void format_v4(const uint8_t a[4], char out[INET_ADDRSTRLEN])
{
	size_t w = 0;
	int i;

	for (i = 0; i < 4; i++) {
		unsigned int b = a[i];

		if (i)
			out[w++] = '.';
		if (b >= 100)
			out[w++] = (char)('0' + b / 100);
		if (b >= 10)
			out[w++] = (char)('0' + b / 10 % 10);
		out[w++] = (char)('0' + b % 10);
	}
	out[w] = '\0';
}

/* Socket kinds and options refused by the surface layer: no destination, a description. */
static int surface_view_init(struct decision_view *v, const struct sl_decision_event *ev)
{
	v->family = ev->family == AF_INET ? "ipv4" : ev->family == AF_INET6 ? "ipv6" : "other";
	if (ev->hook == SL_HOOK_TC)
		util_copy(v->dst_port, sizeof(v->dst_port), "a frame that is not IPv4 or IPv6");
	else if (ev->hook == SL_HOOK_SOCK_CREATE || ev->hook == SL_HOOK_LSM)
		util_fmt(v->dst_port, sizeof(v->dst_port), "socket(family %u, type %u, protocol %u)",
			 ev->family, ev->port, ev->rule_id);
	else if (ev->hook == SL_HOOK_SETSOCKOPT)
		util_fmt(v->dst_port, sizeof(v->dst_port), "setsockopt(level %u, option %u)",
			 ev->protocol, ev->port);
	else if (ev->reason == SL_REASON_PROTOCOL)
		util_copy(v->dst_port, sizeof(v->dst_port), "a packet whose headers cannot be read");
	else
		util_copy(v->dst_port, sizeof(v->dst_port),
			  "a packet with IP options or an IPv6 routing header");
	util_fmt(v->proto, sizeof(v->proto), "ip-%u", ev->protocol);
	util_copy(v->rule, sizeof(v->rule), "surface");
	decision_safe_comm(v->comm, sizeof(v->comm), ev->comm);
	v->hook = hook_names[ev->hook];
	v->deny = true;
	v->decision = "deny";
	v->reason = reason_names[ev->reason];
	v->enforced = ev->enforced;
	v->surface = true;
	return 0;
}

/*
 * The backstop judged again a flow of another policy generation that the switch's re-judge did
 * not find (bpf/skb.bpf.c flow_restamp): the new policy allows it by a name alone, and no
 * ClientHello of it was checked against that policy's names. rule_id: the rule that allows it.
 */
static bool sni_unchecked_by_backstop(const struct sl_decision_event *ev)
{
	return ev->reason == SL_REASON_SNI_UNCHECKED && ev->hook == SL_HOOK_EGRESS &&
	       ev->verdict == SL_VERDICT_DENY;
}

/*
 * A connect() that would have gone ahead, refused because the kernel kept no state for its flow
 * (bpf/sock_addr.bpf.c finish). rule_id: the rule that would have allowed it (0: the default).
 */
static bool flow_no_state_at_connect(const struct sl_decision_event *ev)
{
	return ev->reason == SL_REASON_FLOW_NO_STATE && ev->verdict == SL_VERDICT_DENY &&
	       (ev->hook == SL_HOOK_CONNECT4 || ev->hook == SL_HOOK_CONNECT6);
}

/* Refusals that name the rule that would have allowed what they refused, if a rule would. */
static bool names_rule_it_refused(const struct sl_decision_event *ev)
{
	return ev->reason == SL_REASON_LOG_UNWRITABLE || flow_no_state_at_connect(ev);
}

int decision_view_init(struct decision_view *v, const struct sl_decision_event *ev,
		       const struct policy *p)
{
	memset(v, 0, sizeof(*v));
	/* no program records seccomp refusals: sluice writes their lines itself */
	if (ev->hook == SL_HOOK_NONE || ev->hook >= SL_HOOK_MAX || ev->hook == SL_HOOK_SOCK_RELEASE ||
	    ev->hook == SL_HOOK_SECCOMP ||
	    (ev->verdict != SL_VERDICT_ALLOW && ev->verdict != SL_VERDICT_DENY) ||
	    ev->reason < SL_REASON_RULE ||
	    (ev->reason > SL_REASON_HOST_CAP && ev->reason != SL_REASON_LOG_UNWRITABLE &&
	     !sni_unchecked_by_backstop(ev) && !flow_no_state_at_connect(ev)))
		return -EINVAL;
	/* the egress program also judges destinations (the backstop); tc sees non-IP frames */
	if (ev->hook == SL_HOOK_SOCK_CREATE || ev->hook == SL_HOOK_SETSOCKOPT ||
	    (ev->hook == SL_HOOK_LSM && ev->reason == SL_REASON_SOCKET_KIND) ||
	    (ev->hook == SL_HOOK_EGRESS &&
	     (ev->reason == SL_REASON_SOURCE_ROUTE || ev->reason == SL_REASON_PROTOCOL)) ||
	    (ev->hook == SL_HOOK_TC && ev->family != AF_INET && ev->family != AF_INET6))
		return surface_view_init(v, ev);
	if ((ev->reason == SL_REASON_RULE || ev->reason == SL_REASON_HOST_CAP ||
	     ev->reason == SL_REASON_SNI_UNCHECKED) &&
	    (ev->rule_id == SL_RULE_DEFAULT || ev->rule_id > p->n_rules))
		return -EINVAL;
	/* refused while the log could not be written, or without state: the rule that would
	 * have allowed it */
	if (names_rule_it_refused(ev) && ev->rule_id > p->n_rules)
		return -EINVAL;

	/* dst_port is for the stderr notice of a denial: an allow (the hot path) needs none */
	if (ev->family == AF_INET) {
		format_v4(ev->addr, v->dst);
		v->family = "ipv4";
		if (ev->verdict == SL_VERDICT_DENY)
			util_fmt(v->dst_port, sizeof(v->dst_port), "%s:%u", v->dst, ev->port);
	} else if (ev->family == AF_INET6) {
		inet_ntop(AF_INET6, ev->addr, v->dst, sizeof(v->dst));
		v->family = "ipv6";
		if (ev->verdict == SL_VERDICT_DENY)
			util_fmt(v->dst_port, sizeof(v->dst_port), "[%s]:%u", v->dst, ev->port);
		if (ev->embedded_v4)
			inet_ntop(AF_INET, ev->eff_addr, v->dst_v4, sizeof(v->dst_v4));
	} else {
		return -EINVAL;
	}

	if (ev->protocol == IPPROTO_TCP)
		util_copy(v->proto, sizeof(v->proto), "tcp");
	else if (ev->protocol == IPPROTO_UDP)
		util_copy(v->proto, sizeof(v->proto), "udp");
	else
		util_fmt(v->proto, sizeof(v->proto), "ip-%u", ev->protocol);
	/* dst_port is sized for the longest address, port and protocol name. */
	if (ev->verdict == SL_VERDICT_DENY) {
		size_t n = strlen(v->dst_port);

		util_fmt(v->dst_port + n, sizeof(v->dst_port) - n, "/%s", v->proto);
	}

	if (ev->reason == SL_REASON_RULE || ev->reason == SL_REASON_HOST_CAP ||
	    ev->reason == SL_REASON_SNI_UNCHECKED ||
	    (names_rule_it_refused(ev) && ev->rule_id))
		policy_rule_id_name(p, ev->rule_id, v->rule, sizeof(v->rule));
	else if (ev->reason == SL_REASON_BLACKHOLE)
		util_copy(v->rule, sizeof(v->rule), "blackhole");
	else if (ev->reason == SL_REASON_DNS_REDIRECT)
		util_copy(v->rule, sizeof(v->rule), "dns");
	else
		util_copy(v->rule, sizeof(v->rule), "default");

	decision_safe_comm(v->comm, sizeof(v->comm), ev->comm);
	v->hook = hook_names[ev->hook];
	v->deny = ev->verdict == SL_VERDICT_DENY;
	v->decision = v->deny ? "deny" : "allow";
	v->reason = reason_names[ev->reason];
	v->enforced = ev->enforced;
	return 0;
}
