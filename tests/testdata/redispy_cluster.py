# redis-py's RedisCluster against a proxy (argv: host port): the commands
# whose keys depend on their arguments are routed (redis-py asks COMMAND
# GETKEYS for movablekeys commands) and answer as Redis does. Run by
# TestClusterClientsRouteMovableKeys.
import sys

from redis.cluster import RedisCluster

rc = RedisCluster(host=sys.argv[1], port=int(sys.argv[2]), decode_responses=True)


def check(want, *args):
    got = rc.execute_command(*args)
    if got != want:
        sys.exit("%r = %r; want %r" % (args, got, want))


rc.delete("{p}l1")
rc.rpush("{p}l1", "a", "b", "c")
rc.zadd("{p}z1", {"m1": 1, "m2": 2})
rc.zadd("{p}z2", {"m2": 2, "m5": 5})
rc.sadd("{p}s1", "a", "b", "c")
rc.sadd("{p}s2", "b", "c", "d")
rc.rpush("{p}n", "3", "1", "2")
check(["{p}l1", ["a", "b"]], "LMPOP", 2, "{p}nosuch", "{p}l1", "LEFT", "COUNT", 2)
check(["{p}z1", [["m1", "1"]]], "ZMPOP", 2, "{p}z1", "{p}z2", "MIN")
check(2, "SINTERCARD", 2, "{p}s1", "{p}s2")
check(1, "ZINTERCARD", 2, "{p}z1", "{p}z2")
check(3, "SORT", "{p}n", "STORE", "{p}sorted")
check(["1", "2", "3"], "LRANGE", "{p}sorted", 0, -1)
check(["{p}z2", [["m5", "5"]]], "BZMPOP", 1, 2, "{p}nosuch", "{p}z2", "MAX")
check(None, "BZMPOP", 0.2, 1, "{p}empty", "MIN")
check(1, "ZUNIONSTORE", "{p}u", 2, "{p}z1", "{p}z2")
print("redis-py %s: LMPOP ZMPOP SINTERCARD ZINTERCARD SORT STORE BZMPOP ZUNIONSTORE routed" % __import__("redis").__version__)
