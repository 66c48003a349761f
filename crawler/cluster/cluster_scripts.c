/*
 * cluster_scripts.c: the Lua scripts of the protocol (cluster.h), run in
 * Redis by hash (EVALSHA, loaded again on NOSCRIPT by the router). Every
 * key a script touches shares one hash slot: the keys it is given, and
 * names it builds from ARGV[1] (a key prefix holding that slot's tag).
 * Time is Redis's own (TIME, in ms), so that every agent and every lease
 * counts on one clock.
 */
#include <pthread.h>

#include "crawler/cluster/cluster_int.h"

#define NOW                                                                                        \
	"local t = redis.call('TIME')\n"                                                           \
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"

static struct router_script scripts[CL_SCRIPTS] = {
	/* ARGV base ({P}), name, incarnation, ttl: this incarnation joins
	 * unless an earlier one's lease still runs (0). */
	[CL_S_JOIN] = { .body = NOW
	                "local b, name, inc = ARGV[1], ARGV[2], ARGV[3]\n"
	                "local exp = tonumber(redis.call('ZSCORE', b .. ':alive', name) or '0')\n"
	                "if exp > now then return 0 end\n"
	                "redis.call('ZADD', b .. ':alive', now + tonumber(ARGV[4]), name)\n"
	                "redis.call('HSET', b .. ':members', name, inc)\n"
	                "redis.call('ZREM', b .. ':idle', name)\n"
	                "redis.call('INCR', b .. ':ver')\n"
	                "redis.call('INCR', b .. ':epoch')\n"
	                "redis.call('HSET', b .. ':stats:' .. name, 'incarnation', inc,\n"
	                "           'lease_ms', ARGV[4])\n"
	                "return 1\n" },
	/* ARGV base, name, incarnation, ttl: 1 renewed; 0 lapsed or taken by
	 * another incarnation. */
	[CL_S_RENEW] = { .body = NOW
	                 "local b, name = ARGV[1], ARGV[2]\n"
	                 "if redis.call('HGET', b .. ':members', name) ~= ARGV[3] then return 0 "
	                 "end\n"
	                 "local exp = tonumber(redis.call('ZSCORE', b .. ':alive', name) or '0')\n"
	                 "if exp <= now then return 0 end\n"
	                 "exp = now + tonumber(ARGV[4])\n"
	                 "redis.call('ZADD', b .. ':alive', exp, name)\n"
	                 "redis.call('ZADD', b .. ':idle', 'XX', exp, name)\n"
	                 "return 1\n" },
	/* ARGV base, name, incarnation: a graceful leave. */
	[CL_S_LEAVE] = { .body = "local b, name = ARGV[1], ARGV[2]\n"
	                         "if redis.call('HGET', b .. ':members', name) == ARGV[3] then\n"
	                         "  redis.call('ZREM', b .. ':alive', name)\n"
	                         "  redis.call('ZREM', b .. ':idle', name)\n"
	                         "  redis.call('INCR', b .. ':ver')\n"
	                         "  redis.call('INCR', b .. ':epoch')\n"
	                         "end\n"
	                         "return 1\n" },
	/* ARGV base, known version, server time of the last read: {ver, now}
	 * when nothing changed since (no join or leave, no lease lapsed in
	 * between), else {ver, now, #live, live..., dead...}. */
	[CL_S_VIEW] = { .body = NOW
	                "local b = ARGV[1]\n"
	                "local ver = tonumber(redis.call('GET', b .. ':ver') or '0')\n"
	                "if ver == tonumber(ARGV[2]) and\n"
	                "   redis.call('ZCOUNT', b .. ':alive', '(' .. ARGV[3], now) == 0 then\n"
	                "  return {ver, now}\n"
	                "end\n"
	                "local live = redis.call('ZRANGEBYSCORE', b .. ':alive', '(' .. now, "
	                "'+inf')\n"
	                "local out, is = {ver, now, #live}, {}\n"
	                "for _, n in ipairs(live) do out[#out + 1] = n; is[n] = true end\n"
	                "for _, n in ipairs(redis.call('HKEYS', b .. ':members')) do\n"
	                "  if not is[n] then out[#out + 1] = n end\n"
	                "end\n"
	                "return out\n" },
	/* ARGV base, name, pages, requests, bytes: the agent's counters, and
	 * the crawl's page total kept as their sum. */
	[CL_S_STATS] = { .body = "local b, name = ARGV[1], ARGV[2]\n"
	                         "local k = b .. ':stats:' .. name\n"
	                         "local old = tonumber(redis.call('HGET', k, 'pages') or '0')\n"
	                         "redis.call('HSET', k, 'pages', ARGV[3], 'requests', ARGV[4],\n"
	                         "           'bytes', ARGV[5])\n"
	                         "redis.call('INCRBY', b .. ':pages', tonumber(ARGV[3]) - old)\n"
	                         "return 1\n" },
	/* ARGV base, name, 1 idle or 0 busy: the idle set follows, and a change
	 * moves the epoch. */
	[CL_S_IDLE] = { .body = "local b, name = ARGV[1], ARGV[2]\n"
	                        "local exp = redis.call('ZSCORE', b .. ':alive', name)\n"
	                        "local was = redis.call('ZSCORE', b .. ':idle', name) ~= false\n"
	                        "local is = ARGV[3] == '1' and exp ~= false\n"
	                        "if is then redis.call('ZADD', b .. ':idle', exp, name)\n"
	                        "else redis.call('ZREM', b .. ':idle', name) end\n"
	                        "redis.call('HSET', b .. ':stats:' .. name, 'idle', ARGV[3])\n"
	                        "if was ~= is then redis.call('INCR', b .. ':epoch') end\n"
	                        "return 1\n" },
	/* ARGV base: {live agents not idle, inboxes busy by the leader's last
	 * scan if nothing moved since (else -1), pages, live agents, epoch}. */
	[CL_S_CENSUS] = { .body = NOW
	                  "local b = ARGV[1]\n"
	                  "local alive = redis.call('ZCOUNT', b .. ':alive', '(' .. now, '+inf')\n"
	                  "local idle = redis.call('ZCOUNT', b .. ':idle', '(' .. now, '+inf')\n"
	                  "local epoch = tonumber(redis.call('GET', b .. ':epoch') or '0')\n"
	                  "local inboxes = -1\n"
	                  "local c = redis.call('GET', b .. ':census')\n"
	                  "if c then\n"
	                  "  local e, n = string.match(c, '^(%d+) (%d+)$')\n"
	                  "  if tonumber(e) == epoch then inboxes = tonumber(n) end\n"
	                  "end\n"
	                  "local pages = tonumber(redis.call('GET', b .. ':pages') or '0')\n"
	                  "return {alive - idle, inboxes, pages, alive, epoch}\n" },
	/* ARGV base, epoch, busy inboxes: the leader's scan is kept if the
	 * epoch has not moved since it began (1), else dropped (0). */
	[CL_S_CENSUS_STORE] = { .body = "local b = ARGV[1]\n"
	                                "local epoch = tonumber(redis.call('GET', b .. ':epoch') "
	                                "or '0')\n"
	                                "if epoch ~= tonumber(ARGV[2]) then return 0 end\n"
	                                "redis.call('SET', b .. ':census', ARGV[2] .. ' ' .. "
	                                "ARGV[3])\n"
	                                "return 1\n" },
	/* KEYS inbox: 1 if it holds an unread or a pending entry. */
	[CL_S_INBOX_BUSY] = { .body = "local last = redis.call('XREVRANGE', KEYS[1], '+', '-', "
	                              "'COUNT', "
	                              "1)\n"
	                              "if #last == 0 then return 0 end\n"
	                              "local groups = redis.call('XINFO', 'GROUPS', KEYS[1])\n"
	                              "if #groups == 0 then return 1 end\n"
	                              "for _, g in ipairs(groups) do\n"
	                              "  local f = {}\n"
	                              "  for i = 1, #g, 2 do f[g[i]] = g[i + 1] end\n"
	                              "  if f['pending'] > 0 or f['last-delivered-id'] ~= "
	                              "last[1][1] then\n"
	                              "    return 1\n"
	                              "  end\n"
	                              "end\n"
	                              "return 0\n" },
	/* KEYS inbox; ARGV the last ID acked: once nothing is pending, the
	 * entries below it are done and trimmed. */
	[CL_S_TRIM] = { .body = "local p = redis.call('XPENDING', KEYS[1], 'g')\n"
	                        "if p[1] == 0 then redis.call('XTRIM', KEYS[1], 'MINID', ARGV[1]) "
	                        "end\n"
	                        "return p[1]\n" },
	/* KEYS counter; ARGV limit, pages asked: {granted, reserved crawl-wide
	 * after the grant}. Lua numbers are doubles: exact up to 2^53, above
	 * any limit the key table allows. */
	[CL_S_RESERVE] = { .body = "local used = tonumber(redis.call('GET', KEYS[1]) or '0')\n"
	                           "local n = math.min(tonumber(ARGV[2]), tonumber(ARGV[1]) - "
	                           "used)\n"
	                           "if n > 0 then used = redis.call('INCRBY', KEYS[1], n) else n = "
	                           "0 end\n"
	                           "return {n, used}\n" },
	/* KEYS the crawl's deadline (Redis time, ms); ARGV the crawl's length
	 * (ms): set by the first agent that asks, then kept. {ms left (may be
	 * negative), 0}. */
	[CL_S_DEADLINE] = { .body = NOW "local d = tonumber(redis.call('GET', KEYS[1]) or '')\n"
	                                "if not d then\n"
	                                "  d = now + tonumber(ARGV[1])\n"
	                                "  redis.call('SET', KEYS[1], d)\n"
	                                "end\n"
	                                "return {d - now, 0}\n" },
	/*
	 * The IP lease with turns. KEYS: the lease (the holder's name, with a
	 * PX TTL), the waiters by first ask, their deadlines; ARGV name, ttl,
	 * grace, patience. A waiter is an agent refused the lease; it stays one
	 * while it asks again in time: within the wait it was told or its
	 * patience (its own IP delay: it does not wait longer), whichever is
	 * shorter, plus grace. Granted: the lease is free and nobody else
	 * waits, or this agent is the first waiter; or this agent holds it and
	 * nobody waits (its TTL then raised, never lowered). Else {0, ms to
	 * wait}: the holder yields to the waiters. So no agent keeps an IP
	 * while another's hosts wait for it. Redis's clock is read only when
	 * someone waits: the common path is three calls.
	 */
	[CL_S_IP_LEASE] = { .body = "local me = ARGV[1]\n"
	                            "local v = redis.call('GET', KEYS[1])\n"
	                            "local waiting = redis.call('EXISTS', KEYS[3]) == 1\n"
	                            "local function grant()\n"
	                            "  if v == me then\n"
	                            "    if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then\n"
	                            "      redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
	                            "    end\n"
	                            "  else\n"
	                            "    redis.call('SET', KEYS[1], me, 'PX', ARGV[2])\n"
	                            "  end\n"
	                            "  return {1, 0}\n"
	                            "end\n"
	                            "if not waiting and (not v or v == me) then return grant() "
	                            "end\n" NOW
	                            "local grace, patience = tonumber(ARGV[3]), tonumber(ARGV[4])\n"
	                            "local left = v and redis.call('PTTL', KEYS[1]) or 0\n"
	                            "local first = false\n"
	                            "if waiting then\n"
	                            "  for _, w in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], "
	                            "'-inf', "
	                            "now)) do\n"
	                            "    redis.call('ZREM', KEYS[2], w)\n"
	                            "    redis.call('ZREM', KEYS[3], w)\n"
	                            "  end\n"
	                            "  first = redis.call('ZRANGE', KEYS[2], 0, 0)[1] or false\n"
	                            "end\n"
	                            "local function refuse(told)\n"
	                            "  told = math.max(1, told)\n"
	                            "  redis.call('ZADD', KEYS[2], 'NX', now, me)\n"
	                            "  redis.call('ZADD', KEYS[3], now + math.min(told, patience) "
	                            "+ grace, "
	                            "me)\n"
	                            "  redis.call('PEXPIRE', KEYS[2], 60000)\n"
	                            "  redis.call('PEXPIRE', KEYS[3], 60000)\n"
	                            "  return {0, told}\n"
	                            "end\n"
	                            "if v and v ~= me then return refuse(left) end\n"
	                            "if first and first ~= me then\n"
	                            "  if v == me then return refuse(left) end\n"
	                            "  return refuse(tonumber(redis.call('ZSCORE', KEYS[3], "
	                            "first)) - "
	                            "now)\n"
	                            "end\n"
	                            "if first == me then\n"
	                            "  redis.call('ZREM', KEYS[2], me)\n"
	                            "  redis.call('ZREM', KEYS[3], me)\n"
	                            "end\n"
	                            "return grant()\n" },
	/* KEYS the lease; ARGV name, delay: this agent's lease, if it still
	 * holds it, ends delay ms from now. */
	[CL_S_IP_RELEASE] = { .body = "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
	                              "  return redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
	                              "end\n"
	                              "return 0\n" },
};

static pthread_once_t scripts_once = PTHREAD_ONCE_INIT;

static void scripts_init(void)
{
	for (int i = 0; i < CL_SCRIPTS; i++)
		router_script_init(&scripts[i]);
}

const struct router_script *cl_script(enum cl_script_id id)
{
	pthread_once(&scripts_once, scripts_init);
	return &scripts[id];
}
