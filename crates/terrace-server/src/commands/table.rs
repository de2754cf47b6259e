//! The command table: names, arities, flags and key positions (what COMMAND reports and
//! what the executor locks).

use super::{
    blocking, expiry, hashes, keyspace, lists, mpop, pubsub, server, sets, strings, txn, zsets,
    CmdResult, Ctx,
};

/// Writes keys: the executor locks the stripes of its keys.
pub(crate) const WRITE: u32 = 1;
/// Only reads.
pub(crate) const READONLY: u32 = 1 << 1;
/// Allowed before AUTH.
pub(crate) const NOAUTH: u32 = 1 << 2;
/// Runs at once even inside MULTI (MULTI, EXEC, DISCARD, WATCH, UNWATCH, QUIT).
pub(crate) const NOQUEUE: u32 = 1 << 3;
/// Holds the whole store exclusively (EXEC, FLUSHDB, FLUSHALL).
pub(crate) const EXCLUSIVE: u32 = 1 << 4;
/// Administrative.
pub(crate) const ADMIN: u32 = 1 << 5;
/// O(1) or O(log n).
pub(crate) const FAST: u32 = 1 << 6;
/// May run in a group with other clients' commands, its writes in the group's one
/// engine batch (`pending.rs`, `run.rs`): the handler reads and writes keys only through
/// `Ctx`'s accessors and never blocks.
pub(crate) const GROUP: u32 = 1 << 7;

pub(crate) type Handler = fn(&mut Ctx<'_>, &[&[u8]]) -> CmdResult;

/// One command.
pub(crate) struct CommandSpec {
    pub(crate) name: &'static str,
    /// Redis arity: `n` exactly n arguments (name included), `-n` at least n.
    pub(crate) arity: i32,
    pub(crate) flags: u32,
    pub(crate) first_key: i32,
    /// Last key position; negative counts from the end.
    pub(crate) last_key: i32,
    pub(crate) step: i32,
    pub(crate) group: &'static str,
    pub(crate) summary: &'static str,
    pub(crate) handler: Handler,
}

impl CommandSpec {
    pub(crate) fn arity_ok(&self, argc: usize) -> bool {
        let argc = i64::try_from(argc).unwrap_or(i64::MAX);
        let arity = i64::from(self.arity);
        if arity >= 0 {
            argc == arity
        } else {
            argc >= -arity
        }
    }

    /// Argument indexes holding keys.
    pub(crate) fn key_positions(&self, argc: usize) -> impl Iterator<Item = usize> {
        let argc = i64::try_from(argc).unwrap_or(i64::MAX);
        let first = i64::from(self.first_key);
        let last = if self.last_key < 0 {
            argc + i64::from(self.last_key)
        } else {
            i64::from(self.last_key).min(argc - 1)
        };
        let step = i64::from(self.step.max(1));
        let last = if first > 0 { last } else { first - 1 };
        (first..=last)
            .step_by(usize::try_from(step).unwrap_or(1))
            .filter_map(|i| usize::try_from(i).ok())
    }

    /// Flag names as COMMAND reports them.
    pub(crate) fn flag_names(&self) -> Vec<&'static str> {
        [
            (WRITE, "write"),
            (READONLY, "readonly"),
            (ADMIN, "admin"),
            (NOAUTH, "no_auth"),
            (FAST, "fast"),
            (NOQUEUE, "allow_busy"),
        ]
        .iter()
        .filter(|(f, _)| self.flags & f != 0)
        .map(|&(_, n)| n)
        .collect()
    }
}

macro_rules! cmd {
    ($name:literal, $arity:expr, $flags:expr, $first:expr, $last:expr, $step:expr, $group:literal, $summary:literal, $h:path) => {
        CommandSpec {
            name: $name,
            arity: $arity,
            flags: $flags,
            first_key: $first,
            last_key: $last,
            step: $step,
            group: $group,
            summary: $summary,
            handler: $h,
        }
    };
}

const W: u32 = WRITE;
const R: u32 = READONLY;
const WF: u32 = WRITE | FAST;
const RF: u32 = READONLY | FAST;

/// Every command, in alphabetical order.
pub(crate) static COMMANDS: &[CommandSpec] = &[
    cmd!(
        "append",
        3,
        W,
        1,
        1,
        1,
        "string",
        "Appends a string to the value of a key.",
        strings::append
    ),
    cmd!(
        "auth",
        -2,
        NOAUTH | FAST,
        0,
        0,
        0,
        "connection",
        "Authenticates the connection.",
        server::auth
    ),
    cmd!(
        "blmove",
        6,
        W,
        1,
        2,
        1,
        "list",
        "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.",
        blocking::blmove
    ),
    cmd!(
        "blmpop",
        -5,
        W,
        3,
        -1,
        1,
        "list",
        "Pops the first elements from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.",
        blocking::blmpop
    ),
    cmd!(
        "blpop",
        -3,
        W,
        1,
        -2,
        1,
        "list",
        "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.",
        blocking::blpop
    ),
    cmd!(
        "brpop",
        -3,
        W,
        1,
        -2,
        1,
        "list",
        "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.",
        blocking::brpop
    ),
    cmd!(
        "brpoplpush",
        4,
        W,
        1,
        2,
        1,
        "list",
        "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.",
        blocking::brpoplpush
    ),
    cmd!(
        "bzmpop",
        -5,
        W,
        3,
        -1,
        1,
        "sorted_set",
        "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.",
        blocking::bzmpop
    ),
    cmd!(
        "bzpopmax",
        -3,
        W,
        1,
        -2,
        1,
        "sorted_set",
        "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.",
        blocking::bzpopmax
    ),
    cmd!(
        "bzpopmin",
        -3,
        W,
        1,
        -2,
        1,
        "sorted_set",
        "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.",
        blocking::bzpopmin
    ),
    cmd!(
        "client",
        -2,
        ADMIN,
        0,
        0,
        0,
        "connection",
        "Client connection commands.",
        server::client
    ),
    cmd!(
        "command",
        -1,
        0,
        0,
        0,
        0,
        "server",
        "Returns details about commands.",
        server::command
    ),
    cmd!(
        "config",
        -2,
        ADMIN,
        0,
        0,
        0,
        "server",
        "Configuration commands.",
        server::config
    ),
    cmd!(
        "copy",
        -3,
        W,
        1,
        2,
        1,
        "generic",
        "Copies the value of a key to a new key.",
        keyspace::copy
    ),
    cmd!(
        "dbsize",
        1,
        R,
        0,
        0,
        0,
        "server",
        "Returns the number of keys.",
        keyspace::dbsize
    ),
    cmd!(
        "decr",
        2,
        WF,
        1,
        1,
        1,
        "string",
        "Decrements the integer value of a key by one.",
        strings::decr
    ),
    cmd!(
        "decrby",
        3,
        WF,
        1,
        1,
        1,
        "string",
        "Decrements a number from the integer value of a key.",
        strings::decrby
    ),
    cmd!(
        "del",
        -2,
        W,
        1,
        -1,
        1,
        "generic",
        "Deletes one or more keys.",
        keyspace::del
    ),
    cmd!(
        "discard",
        1,
        NOQUEUE | FAST,
        0,
        0,
        0,
        "transactions",
        "Discards a transaction.",
        txn::discard
    ),
    cmd!(
        "echo",
        2,
        FAST,
        0,
        0,
        0,
        "connection",
        "Returns the given string.",
        server::echo
    ),
    cmd!(
        "exec",
        1,
        NOQUEUE | EXCLUSIVE,
        0,
        0,
        0,
        "transactions",
        "Executes all commands in a transaction.",
        txn::exec
    ),
    cmd!(
        "exists",
        -2,
        RF,
        1,
        -1,
        1,
        "generic",
        "Determines whether one or more keys exist.",
        keyspace::exists
    ),
    cmd!(
        "expire",
        -3,
        WF,
        1,
        1,
        1,
        "generic",
        "Sets a key's time to live in seconds.",
        expiry::expire
    ),
    cmd!(
        "expireat",
        -3,
        WF,
        1,
        1,
        1,
        "generic",
        "Sets the expiration time of a key to a Unix timestamp.",
        expiry::expireat
    ),
    cmd!(
        "expiretime",
        2,
        RF,
        1,
        1,
        1,
        "generic",
        "Returns the expiration time of a key as a Unix timestamp.",
        expiry::expiretime
    ),
    cmd!(
        "flushall",
        -1,
        W | EXCLUSIVE,
        0,
        0,
        0,
        "server",
        "Removes all keys.",
        keyspace::flushdb
    ),
    cmd!(
        "flushdb",
        -1,
        W | EXCLUSIVE,
        0,
        0,
        0,
        "server",
        "Removes all keys.",
        keyspace::flushdb
    ),
    cmd!(
        "get",
        2,
        RF,
        1,
        1,
        1,
        "string",
        "Returns the string value of a key.",
        strings::get
    ),
    cmd!(
        "getdel",
        2,
        WF,
        1,
        1,
        1,
        "string",
        "Returns the string value of a key after deleting the key.",
        strings::getdel
    ),
    cmd!(
        "getex",
        -2,
        WF,
        1,
        1,
        1,
        "string",
        "Returns the string value of a key after setting its expiration time.",
        strings::getex
    ),
    cmd!(
        "getrange",
        4,
        R,
        1,
        1,
        1,
        "string",
        "Returns a substring of the string stored at a key.",
        strings::getrange
    ),
    cmd!(
        "getset",
        3,
        WF,
        1,
        1,
        1,
        "string",
        "Returns the previous string value of a key after setting it to a new value.",
        strings::getset
    ),
    cmd!(
        "hdel",
        -3,
        WF | GROUP,
        1,
        1,
        1,
        "hash",
        "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.",
        hashes::hdel
    ),
    cmd!(
        "hello",
        -1,
        NOAUTH | FAST,
        0,
        0,
        0,
        "connection",
        "Handshakes with the server.",
        server::hello
    ),
    cmd!(
        "hexists",
        3,
        RF | GROUP,
        1,
        1,
        1,
        "hash",
        "Determines whether a field exists in a hash.",
        hashes::hexists
    ),
    cmd!(
        "hget",
        3,
        RF | GROUP,
        1,
        1,
        1,
        "hash",
        "Returns the value of a field in a hash.",
        hashes::hget
    ),
    cmd!(
        "hgetall",
        2,
        R | GROUP,
        1,
        1,
        1,
        "hash",
        "Returns all fields and values in a hash.",
        hashes::hgetall
    ),
    cmd!(
        "hincrby",
        4,
        WF | GROUP,
        1,
        1,
        1,
        "hash",
        "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.",
        hashes::hincrby
    ),
    cmd!(
        "hincrbyfloat",
        4,
        WF | GROUP,
        1,
        1,
        1,
        "hash",
        "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.",
        hashes::hincrbyfloat
    ),
    cmd!(
        "hkeys",
        2,
        R | GROUP,
        1,
        1,
        1,
        "hash",
        "Returns all fields in a hash.",
        hashes::hkeys
    ),
    cmd!(
        "hlen",
        2,
        RF | GROUP,
        1,
        1,
        1,
        "hash",
        "Returns the number of fields in a hash.",
        hashes::hlen
    ),
    cmd!(
        "hmget",
        -3,
        RF | GROUP,
        1,
        1,
        1,
        "hash",
        "Returns the values of all fields in a hash.",
        hashes::hmget
    ),
    cmd!(
        "hmset",
        -4,
        WF | GROUP,
        1,
        1,
        1,
        "hash",
        "Sets the values of multiple fields.",
        hashes::hmset
    ),
    cmd!(
        "hrandfield",
        -2,
        R | GROUP,
        1,
        1,
        1,
        "hash",
        "Returns one or more random fields from a hash.",
        hashes::hrandfield
    ),
    cmd!(
        "hscan",
        -3,
        R | GROUP,
        1,
        1,
        1,
        "hash",
        "Iterates over fields and values of a hash.",
        hashes::hscan
    ),
    cmd!(
        "hset",
        -4,
        WF | GROUP,
        1,
        1,
        1,
        "hash",
        "Creates or modifies the value of a field in a hash.",
        hashes::hset
    ),
    cmd!(
        "hsetnx",
        4,
        WF | GROUP,
        1,
        1,
        1,
        "hash",
        "Sets the value of a field in a hash only when the field doesn't exist.",
        hashes::hsetnx
    ),
    cmd!(
        "hstrlen",
        3,
        RF | GROUP,
        1,
        1,
        1,
        "hash",
        "Returns the length of the value of a field.",
        hashes::hstrlen
    ),
    cmd!(
        "hvals",
        2,
        R | GROUP,
        1,
        1,
        1,
        "hash",
        "Returns all values in a hash.",
        hashes::hvals
    ),
    cmd!(
        "incr",
        2,
        WF,
        1,
        1,
        1,
        "string",
        "Increments the integer value of a key by one.",
        strings::incr
    ),
    cmd!(
        "incrby",
        3,
        WF,
        1,
        1,
        1,
        "string",
        "Increments the integer value of a key by a number.",
        strings::incrby
    ),
    cmd!(
        "incrbyfloat",
        3,
        WF,
        1,
        1,
        1,
        "string",
        "Increment the floating point value of a key by a number.",
        strings::incrbyfloat
    ),
    cmd!(
        "info",
        -1,
        0,
        0,
        0,
        0,
        "server",
        "Returns information and statistics about the server.",
        server::info
    ),
    cmd!(
        "keys",
        2,
        R,
        0,
        0,
        0,
        "generic",
        "Returns all key names that match a pattern.",
        keyspace::keys
    ),
    cmd!(
        "lindex",
        3,
        R | GROUP,
        1,
        1,
        1,
        "list",
        "Returns an element from a list by its index.",
        lists::lindex
    ),
    cmd!(
        "linsert",
        5,
        W | GROUP,
        1,
        1,
        1,
        "list",
        "Inserts an element before or after another element in a list.",
        lists::linsert
    ),
    cmd!(
        "llen",
        2,
        RF | GROUP,
        1,
        1,
        1,
        "list",
        "Returns the length of a list.",
        lists::llen
    ),
    cmd!(
        "lmove",
        5,
        W | GROUP,
        1,
        2,
        1,
        "list",
        "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.",
        lists::lmove
    ),
    cmd!(
        "lmpop",
        -4,
        W,
        2,
        -1,
        1,
        "list",
        "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.",
        mpop::lmpop
    ),
    cmd!(
        "lpop",
        -2,
        WF | GROUP,
        1,
        1,
        1,
        "list",
        "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.",
        lists::lpop
    ),
    cmd!(
        "lpos",
        -3,
        R | GROUP,
        1,
        1,
        1,
        "list",
        "Returns the index of matching elements in a list.",
        lists::lpos
    ),
    cmd!(
        "lpush",
        -3,
        WF | GROUP,
        1,
        1,
        1,
        "list",
        "Prepends one or more elements to a list. Creates the key if it doesn't exist.",
        lists::lpush
    ),
    cmd!(
        "lpushx",
        -3,
        WF | GROUP,
        1,
        1,
        1,
        "list",
        "Prepends one or more elements to a list only when the list exists.",
        lists::lpushx
    ),
    cmd!(
        "lrange",
        4,
        R | GROUP,
        1,
        1,
        1,
        "list",
        "Returns a range of elements from a list.",
        lists::lrange
    ),
    cmd!(
        "lrem",
        4,
        W | GROUP,
        1,
        1,
        1,
        "list",
        "Removes elements from a list. Deletes the list if the last element was removed.",
        lists::lrem
    ),
    cmd!(
        "lset",
        4,
        W | GROUP,
        1,
        1,
        1,
        "list",
        "Sets the value of an element in a list by its index.",
        lists::lset
    ),
    cmd!(
        "ltrim",
        4,
        W | GROUP,
        1,
        1,
        1,
        "list",
        "Removes elements from both ends a list. Deletes the list if all elements were trimmed.",
        lists::ltrim
    ),
    cmd!(
        "mget",
        -2,
        RF,
        1,
        -1,
        1,
        "string",
        "Atomically returns the string values of one or more keys.",
        strings::mget
    ),
    cmd!(
        "mset",
        -3,
        W,
        1,
        -1,
        2,
        "string",
        "Atomically creates or modifies the string values of one or more keys.",
        strings::mset
    ),
    cmd!(
        "msetnx",
        -3,
        W,
        1,
        -1,
        2,
        "string",
        "Atomically sets keys only when none of them exist.",
        strings::msetnx
    ),
    cmd!(
        "multi",
        1,
        NOQUEUE | FAST,
        0,
        0,
        0,
        "transactions",
        "Starts a transaction.",
        txn::multi
    ),
    cmd!(
        "object",
        -2,
        R,
        2,
        2,
        1,
        "generic",
        "A container for object introspection commands.",
        keyspace::object
    ),
    cmd!(
        "persist",
        2,
        WF,
        1,
        1,
        1,
        "generic",
        "Removes the expiration time of a key.",
        expiry::persist
    ),
    cmd!(
        "pexpire",
        -3,
        WF,
        1,
        1,
        1,
        "generic",
        "Sets a key's time to live in milliseconds.",
        expiry::pexpire
    ),
    cmd!(
        "pexpireat",
        -3,
        WF,
        1,
        1,
        1,
        "generic",
        "Sets the expiration time of a key to a Unix milliseconds timestamp.",
        expiry::pexpireat
    ),
    cmd!(
        "pexpiretime",
        2,
        RF,
        1,
        1,
        1,
        "generic",
        "Returns the expiration time of a key as a Unix milliseconds timestamp.",
        expiry::pexpiretime
    ),
    cmd!(
        "ping",
        -1,
        FAST,
        0,
        0,
        0,
        "connection",
        "Returns the server's liveliness response.",
        server::ping
    ),
    cmd!(
        "psetex",
        4,
        W,
        1,
        1,
        1,
        "string",
        "Sets the value and expiration in milliseconds of a key.",
        strings::psetex
    ),
    cmd!(
        "psubscribe",
        -2,
        NOQUEUE,
        0,
        0,
        0,
        "pubsub",
        "Listens for messages published to channels that match one or more patterns.",
        pubsub::psubscribe
    ),
    cmd!(
        "pttl",
        2,
        RF,
        1,
        1,
        1,
        "generic",
        "Returns the expiration time in milliseconds of a key.",
        expiry::pttl
    ),
    cmd!(
        "publish",
        3,
        FAST,
        0,
        0,
        0,
        "pubsub",
        "Posts a message to a channel.",
        pubsub::publish
    ),
    cmd!(
        "pubsub",
        -2,
        0,
        0,
        0,
        0,
        "pubsub",
        "A container for Pub/Sub commands.",
        pubsub::pubsub
    ),
    cmd!(
        "punsubscribe",
        -1,
        NOQUEUE,
        0,
        0,
        0,
        "pubsub",
        "Stops listening to messages published to channels that match one or more patterns.",
        pubsub::punsubscribe
    ),
    cmd!(
        "quit",
        -1,
        NOAUTH | NOQUEUE | FAST,
        0,
        0,
        0,
        "connection",
        "Closes the connection.",
        server::quit
    ),
    cmd!(
        "randomkey",
        1,
        R,
        0,
        0,
        0,
        "generic",
        "Returns a random key name.",
        keyspace::randomkey
    ),
    cmd!(
        "rename",
        3,
        W,
        1,
        2,
        1,
        "generic",
        "Renames a key and overwrites the destination.",
        keyspace::rename
    ),
    cmd!(
        "renamenx",
        3,
        WF,
        1,
        2,
        1,
        "generic",
        "Renames a key only when the target key name doesn't exist.",
        keyspace::renamenx
    ),
    cmd!(
        "rpop",
        -2,
        WF | GROUP,
        1,
        1,
        1,
        "list",
        "Returns and removes the last elements of a list. Deletes the list if the last element was popped.",
        lists::rpop
    ),
    cmd!(
        "rpoplpush",
        3,
        W | GROUP,
        1,
        2,
        1,
        "list",
        "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.",
        lists::rpoplpush
    ),
    cmd!(
        "rpush",
        -3,
        WF | GROUP,
        1,
        1,
        1,
        "list",
        "Appends one or more elements to a list. Creates the key if it doesn't exist.",
        lists::rpush
    ),
    cmd!(
        "rpushx",
        -3,
        WF | GROUP,
        1,
        1,
        1,
        "list",
        "Appends an element to a list only when the list exists.",
        lists::rpushx
    ),
    cmd!(
        "sadd",
        -3,
        WF | GROUP,
        1,
        1,
        1,
        "set",
        "Adds one or more members to a set. Creates the key if it doesn't exist.",
        sets::sadd
    ),
    cmd!(
        "scan",
        -2,
        R,
        0,
        0,
        0,
        "generic",
        "Iterates over the key names in the database.",
        keyspace::scan
    ),
    cmd!(
        "scard",
        2,
        RF | GROUP,
        1,
        1,
        1,
        "set",
        "Returns the number of members in a set.",
        sets::scard
    ),
    cmd!(
        "sdiff",
        -2,
        R | GROUP,
        1,
        -1,
        1,
        "set",
        "Returns the difference of multiple sets.",
        sets::sdiff
    ),
    cmd!(
        "sdiffstore",
        -3,
        W | GROUP,
        1,
        -1,
        1,
        "set",
        "Stores the difference of multiple sets in a key.",
        sets::sdiffstore
    ),
    cmd!(
        "select",
        2,
        FAST,
        0,
        0,
        0,
        "connection",
        "Changes the selected database.",
        server::select
    ),
    cmd!(
        "set",
        -3,
        W,
        1,
        1,
        1,
        "string",
        "Sets the string value of a key.",
        strings::set
    ),
    cmd!(
        "setex",
        4,
        W,
        1,
        1,
        1,
        "string",
        "Sets the string value and expiration time of a key.",
        strings::setex
    ),
    cmd!(
        "setnx",
        3,
        WF,
        1,
        1,
        1,
        "string",
        "Set the string value of a key only when the key doesn't exist.",
        strings::setnx
    ),
    cmd!(
        "setrange",
        4,
        W,
        1,
        1,
        1,
        "string",
        "Overwrites a part of a string value.",
        strings::setrange
    ),
    cmd!(
        "shutdown",
        -1,
        ADMIN | NOQUEUE,
        0,
        0,
        0,
        "server",
        "Stops the server after flushing.",
        server::shutdown
    ),
    cmd!(
        "sinter",
        -2,
        R | GROUP,
        1,
        -1,
        1,
        "set",
        "Returns the intersect of multiple sets.",
        sets::sinter
    ),
    cmd!(
        "sintercard",
        -3,
        R | GROUP,
        2,
        -1,
        1,
        "set",
        "Returns the number of members of the intersect of multiple sets.",
        sets::sintercard
    ),
    cmd!(
        "sinterstore",
        -3,
        W | GROUP,
        1,
        -1,
        1,
        "set",
        "Stores the intersect of multiple sets in a key.",
        sets::sinterstore
    ),
    cmd!(
        "sismember",
        3,
        RF | GROUP,
        1,
        1,
        1,
        "set",
        "Determines whether a member belongs to a set.",
        sets::sismember
    ),
    cmd!(
        "smembers",
        2,
        R | GROUP,
        1,
        1,
        1,
        "set",
        "Returns all members of a set.",
        sets::smembers
    ),
    cmd!(
        "smismember",
        -3,
        RF | GROUP,
        1,
        1,
        1,
        "set",
        "Determines whether multiple members belong to a set.",
        sets::smismember
    ),
    cmd!(
        "smove",
        4,
        WF | GROUP,
        1,
        2,
        1,
        "set",
        "Moves a member from one set to another.",
        sets::smove
    ),
    cmd!(
        "spop",
        -2,
        WF | GROUP,
        1,
        1,
        1,
        "set",
        "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.",
        sets::spop
    ),
    cmd!(
        "spublish",
        3,
        FAST,
        0,
        0,
        0,
        "pubsub",
        "Post a message to a shard channel",
        pubsub::spublish
    ),
    cmd!(
        "srandmember",
        -2,
        R | GROUP,
        1,
        1,
        1,
        "set",
        "Get one or multiple random members from a set",
        sets::srandmember
    ),
    cmd!(
        "srem",
        -3,
        WF | GROUP,
        1,
        1,
        1,
        "set",
        "Removes one or more members from a set. Deletes the set if the last member was removed.",
        sets::srem
    ),
    cmd!(
        "sscan",
        -3,
        R | GROUP,
        1,
        1,
        1,
        "set",
        "Iterates over members of a set.",
        sets::sscan
    ),
    cmd!(
        "ssubscribe",
        -2,
        NOQUEUE,
        0,
        0,
        0,
        "pubsub",
        "Listens for messages published to shard channels.",
        pubsub::ssubscribe
    ),
    cmd!(
        "strlen",
        2,
        RF,
        1,
        1,
        1,
        "string",
        "Returns the length of a string value.",
        strings::strlen
    ),
    cmd!(
        "subscribe",
        -2,
        NOQUEUE,
        0,
        0,
        0,
        "pubsub",
        "Listens for messages published to channels.",
        pubsub::subscribe_cmd
    ),
    cmd!(
        "substr",
        4,
        R,
        1,
        1,
        1,
        "string",
        "Returns a substring from a string value.",
        strings::getrange
    ),
    cmd!(
        "sunion",
        -2,
        R | GROUP,
        1,
        -1,
        1,
        "set",
        "Returns the union of multiple sets.",
        sets::sunion
    ),
    cmd!(
        "sunionstore",
        -3,
        W | GROUP,
        1,
        -1,
        1,
        "set",
        "Stores the union of multiple sets in a key.",
        sets::sunionstore
    ),
    cmd!(
        "sunsubscribe",
        -1,
        NOQUEUE,
        0,
        0,
        0,
        "pubsub",
        "Stops listening to messages posted to shard channels.",
        pubsub::sunsubscribe
    ),
    cmd!(
        "time",
        1,
        FAST,
        0,
        0,
        0,
        "server",
        "Returns the server time.",
        server::time
    ),
    cmd!(
        "touch",
        -2,
        RF,
        1,
        -1,
        1,
        "generic",
        "Returns the number of existing keys out of those specified.",
        keyspace::exists
    ),
    cmd!(
        "trange",
        -3,
        R,
        0,
        0,
        0,
        "generic",
        "Terrace: returns up to COUNT key-value pairs in key order from a start key.",
        keyspace::trange
    ),
    cmd!(
        "ttl",
        2,
        RF,
        1,
        1,
        1,
        "generic",
        "Returns the expiration time in seconds of a key.",
        expiry::ttl
    ),
    cmd!(
        "type",
        2,
        RF,
        1,
        1,
        1,
        "generic",
        "Determines the type of value stored at a key.",
        keyspace::type_of
    ),
    cmd!(
        "unlink",
        -2,
        WF,
        1,
        -1,
        1,
        "generic",
        "Deletes one or more keys.",
        keyspace::del
    ),
    cmd!(
        "unsubscribe",
        -1,
        NOQUEUE,
        0,
        0,
        0,
        "pubsub",
        "Stops listening to messages posted to channels.",
        pubsub::unsubscribe_cmd
    ),
    cmd!(
        "unwatch",
        1,
        NOQUEUE | FAST,
        0,
        0,
        0,
        "transactions",
        "Forgets about watched keys.",
        txn::unwatch
    ),
    cmd!(
        "watch",
        -2,
        NOQUEUE | FAST,
        1,
        -1,
        1,
        "transactions",
        "Monitors changes to keys.",
        txn::watch
    ),
    cmd!(
        "zadd",
        -4,
        WF | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.",
        zsets::zadd
    ),
    cmd!(
        "zcard",
        2,
        RF | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Returns the number of members in a sorted set.",
        zsets::zcard
    ),
    cmd!(
        "zcount",
        4,
        R | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Returns the count of members in a sorted set that have scores within a range.",
        zsets::zcount
    ),
    cmd!(
        "zdiff",
        -3,
        R | GROUP,
        2,
        -1,
        1,
        "sorted_set",
        "Returns the difference between multiple sorted sets.",
        zsets::zdiff
    ),
    cmd!(
        "zdiffstore",
        -4,
        W | GROUP,
        1,
        -1,
        1,
        "sorted_set",
        "Stores the difference of multiple sorted sets in a key.",
        zsets::zdiffstore
    ),
    cmd!(
        "zincrby",
        4,
        WF | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Increments the score of a member in a sorted set.",
        zsets::zincrby
    ),
    cmd!(
        "zinter",
        -3,
        R | GROUP,
        2,
        -1,
        1,
        "sorted_set",
        "Returns the intersect of multiple sorted sets.",
        zsets::zinter
    ),
    cmd!(
        "zintercard",
        -3,
        R | GROUP,
        2,
        -1,
        1,
        "sorted_set",
        "Returns the number of members of the intersect of multiple sorted sets.",
        zsets::zintercard
    ),
    cmd!(
        "zinterstore",
        -4,
        W | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Stores the intersect of multiple sorted sets in a key.",
        zsets::zinterstore
    ),
    cmd!(
        "zlexcount",
        4,
        R | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Returns the number of members in a sorted set within a lexicographical range.",
        zsets::zlexcount
    ),
    cmd!(
        "zmpop",
        -4,
        W,
        2,
        -1,
        1,
        "sorted_set",
        "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped.",
        mpop::zmpop
    ),
    cmd!(
        "zmscore",
        -3,
        RF | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Returns the score of one or more members in a sorted set.",
        zsets::zmscore
    ),
    cmd!(
        "zpopmax",
        -2,
        WF | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.",
        zsets::zpopmax
    ),
    cmd!(
        "zpopmin",
        -2,
        WF | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.",
        zsets::zpopmin
    ),
    cmd!(
        "zrandmember",
        -2,
        R | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Returns one or more random members from a sorted set.",
        zsets::zrandmember
    ),
    cmd!(
        "zrange",
        -4,
        R | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Returns members in a sorted set within a range of indexes.",
        zsets::zrange
    ),
    cmd!(
        "zrangebylex",
        -4,
        R | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Returns members in a sorted set within a lexicographical range.",
        zsets::zrangebylex
    ),
    cmd!(
        "zrangebyscore",
        -4,
        R | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Returns members in a sorted set within a range of scores.",
        zsets::zrangebyscore
    ),
    cmd!(
        "zrangestore",
        -5,
        W | GROUP,
        1,
        2,
        1,
        "sorted_set",
        "Stores a range of members from sorted set in a key.",
        zsets::zrangestore
    ),
    cmd!(
        "zrank",
        -3,
        RF | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Returns the index of a member in a sorted set ordered by ascending scores.",
        zsets::zrank
    ),
    cmd!(
        "zrem",
        -3,
        WF | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.",
        zsets::zrem
    ),
    cmd!(
        "zremrangebylex",
        4,
        W | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.",
        zsets::zremrangebylex
    ),
    cmd!(
        "zremrangebyrank",
        4,
        W | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.",
        zsets::zremrangebyrank
    ),
    cmd!(
        "zremrangebyscore",
        4,
        W | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.",
        zsets::zremrangebyscore
    ),
    cmd!(
        "zrevrange",
        -4,
        R | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Returns members in a sorted set within a range of indexes in reverse order.",
        zsets::zrevrange
    ),
    cmd!(
        "zrevrangebylex",
        -4,
        R | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Returns members in a sorted set within a lexicographical range in reverse order.",
        zsets::zrevrangebylex
    ),
    cmd!(
        "zrevrangebyscore",
        -4,
        R | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Returns members in a sorted set within a range of scores in reverse order.",
        zsets::zrevrangebyscore
    ),
    cmd!(
        "zrevrank",
        -3,
        RF | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Returns the index of a member in a sorted set ordered by descending scores.",
        zsets::zrevrank
    ),
    cmd!(
        "zscan",
        -3,
        R | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Iterates over members and scores of a sorted set.",
        zsets::zscan
    ),
    cmd!(
        "zscore",
        3,
        RF | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Returns the score of a member in a sorted set.",
        zsets::zscore
    ),
    cmd!(
        "zunion",
        -3,
        R | GROUP,
        2,
        -1,
        1,
        "sorted_set",
        "Returns the union of multiple sorted sets.",
        zsets::zunion
    ),
    cmd!(
        "zunionstore",
        -4,
        W | GROUP,
        1,
        1,
        1,
        "sorted_set",
        "Stores the union of multiple sorted sets in a key.",
        zsets::zunionstore
    ),
];

/// Longest command name.
const MAX_NAME_BYTES: usize = 32;

/// The command table by name: every request looks its command up, and a hash lookup
/// costs a fifth of the binary search's eight string comparisons.
type ByName = std::collections::HashMap<&'static [u8], &'static CommandSpec, ahash::RandomState>;

fn by_name() -> &'static ByName {
    static BY_NAME: std::sync::OnceLock<ByName> = std::sync::OnceLock::new();
    BY_NAME.get_or_init(|| {
        // Fixed seeds: the keys are the table's own names, nothing a client chooses.
        let mut map = ByName::with_capacity_and_hasher(
            COMMANDS.len(),
            ahash::RandomState::with_seeds(1, 2, 3, 4),
        );
        for c in COMMANDS {
            map.insert(c.name.as_bytes(), c);
        }
        map
    })
}

/// The command named `name`, in any case.
pub(crate) fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    let mut buf = [0u8; MAX_NAME_BYTES];
    let lower = buf.get_mut(..name.len())?;
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    by_name().get(&*lower).copied()
}
