//! The open-files limit (RLIMIT_NOFILE) and the clients it leaves room for.
//!
//! Every client holds a socket, and the engine keeps table files (its table cache),
//! logs, the manifest and the lock open beside them; a server that accepts more clients
//! than the limit allows fails on `accept` or, worse, when the engine opens a file. As
//! Redis does, the server raises the soft limit toward the hard limit as far as
//! `maxclients` needs, and lowers `maxclients` when the limit cannot be raised enough.
//!
//! Owns: reading and raising the process's soft limit ([`make_room`]) and the policy as a
//! pure function ([`plan`]).
//! Must not touch: sockets, the engine or the configuration; callers apply the result.
//! Concurrency: the limit is process-wide; raising it is safe from any thread.

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};

/// Files kept for the server itself besides the engine's table cache and the clients:
/// listeners, the engine's logs, manifest, lock and directories, the runtimes' event
/// descriptors (Redis reserves the same 32).
pub const RESERVED_FDS: u64 = 32;

/// Open files a runtime keeps per network thread (its event queue and waker).
pub const FDS_PER_NETWORK_THREAD: u64 = 2;

/// What [`plan`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Room {
    /// The soft limit in force afterwards (`u64::MAX`: unlimited).
    pub soft_limit: u64,
    /// Most clients that fit beside the reserve under that limit.
    pub clients: u64,
}

/// The clients `soft_limit` leaves room for once `reserve` files are set aside.
pub fn clients_within(soft_limit: u64, reserve: u64) -> u64 {
    soft_limit.saturating_sub(reserve)
}

/// Decides the soft limit for `maxclients` clients beside `reserve` other files, given
/// the current `soft` and `hard` limits (`u64::MAX`: unlimited). When the soft limit is
/// too low it asks `raise` for the lower of what is needed and the hard limit; if that
/// fails, the soft limit stays. The result's `clients` may be below `maxclients`: the
/// caller lowers maxclients (at start) or refuses the setting (CONFIG SET).
pub fn plan(
    maxclients: u64,
    reserve: u64,
    soft: u64,
    hard: u64,
    raise: impl FnOnce(u64) -> bool,
) -> Room {
    let needed = maxclients.saturating_add(reserve);
    let mut soft_limit = soft;
    if soft < needed {
        let target = needed.min(hard);
        if target > soft && raise(target) {
            soft_limit = target;
        }
    }
    Room {
        soft_limit,
        clients: clients_within(soft_limit, reserve),
    }
}

/// Raises this process's soft open-files limit as far as `maxclients` clients beside
/// `reserve` files need (up to the hard limit) and returns what fits.
pub fn make_room(maxclients: u64, reserve: u64) -> Room {
    let now = getrlimit(Resource::Nofile);
    let soft = now.current.unwrap_or(u64::MAX);
    let hard = now.maximum.unwrap_or(u64::MAX);
    plan(maxclients, reserve, soft, hard, |target| {
        let new = Rlimit {
            current: Some(target),
            maximum: now.maximum,
        };
        match setrlimit(Resource::Nofile, new) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!("cannot raise the open-files limit to {target}: {e}");
                false
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enough_room_changes_nothing() {
        let r = plan(100, 1032, 20_000, 20_000, |_| panic!("no raise needed"));
        assert_eq!(
            r,
            Room {
                soft_limit: 20_000,
                clients: 18_968
            }
        );
    }

    #[test]
    fn raises_the_soft_limit_as_far_as_needed() {
        let mut asked = None;
        let r = plan(10_000, 1032, 1024, 1_048_576, |t| {
            asked = Some(t);
            true
        });
        assert_eq!(asked, Some(11_032));
        assert_eq!(r.clients, 10_000);
        assert_eq!(r.soft_limit, 11_032);
    }

    #[test]
    fn the_hard_limit_caps_the_raise_and_clients_shrink() {
        let r = plan(10_000, 1032, 1024, 4096, |t| t == 4096);
        assert_eq!(
            r,
            Room {
                soft_limit: 4096,
                clients: 4096 - 1032
            }
        );
    }

    #[test]
    fn a_failed_raise_keeps_the_soft_limit() {
        let r = plan(10_000, 1032, 2048, 1_048_576, |_| false);
        assert_eq!(r.soft_limit, 2048);
        assert_eq!(r.clients, 2048 - 1032);
    }

    #[test]
    fn a_limit_under_the_reserve_leaves_no_room() {
        let r = plan(10, 1032, 1000, 1000, |_| panic!("cannot go above hard"));
        assert_eq!(r.clients, 0);
    }

    #[test]
    fn unlimited_needs_no_raise() {
        let r = plan(u64::MAX, 1032, u64::MAX, u64::MAX, |_| panic!("unlimited"));
        assert_eq!(r.clients, u64::MAX - 1032);
    }
}
