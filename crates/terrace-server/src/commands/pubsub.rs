//! Pub/sub: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH, the sharded
//! SSUBSCRIBE, SUNSUBSCRIBE and SPUBLISH (one server is one shard: shard channels are a
//! namespace of their own), and PUBSUB CHANNELS/NUMSUB/NUMPAT/SHARDCHANNELS/SHARDNUMSUB.
//! Nothing is stored: a message goes to the clients subscribed at the moment it is
//! published, as in Redis.
//!
//! Owns: the registry of subscriptions ([`PubSub`], in the engine) and each session's
//! mailbox ([`Subscriber`]). The transport waits on the mailbox beside the socket and
//! writes what arrives (`Session::next_message`). Must not touch: the keyspace.
//! Concurrency: the registry is one mutex; a mailbox is a bounded queue, and a client
//! that lets it fill (it does not read its socket) is cut off, as Redis's pubsub output
//! buffer limit does.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::mpsc;

use super::glob::glob_match;
use super::{CmdResult, Ctx, Fail};
use crate::resp::Reply;

/// Messages a subscriber's mailbox holds before the subscriber is cut off.
const MAILBOX_MESSAGES: usize = 16 * 1024;

/// A published message as one subscriber receives it.
#[derive(Debug, Clone)]
pub struct Message {
    /// A shard channel's message (`smessage`).
    shard: bool,
    /// The pattern that matched (PSUBSCRIBE), or `None` for a channel subscription.
    pattern: Option<Arc<[u8]>>,
    channel: Arc<[u8]>,
    payload: Arc<[u8]>,
}

impl Message {
    /// The push a subscriber is sent: `message channel payload` or
    /// `pmessage pattern channel payload`.
    pub fn reply(&self) -> Reply {
        let b = |s: &[u8]| Reply::Bulk(s.to_vec().into());
        match &self.pattern {
            None if self.shard => {
                Reply::Push(vec![b(b"smessage"), b(&self.channel), b(&self.payload)])
            }
            None => Reply::Push(vec![b(b"message"), b(&self.channel), b(&self.payload)]),
            Some(p) => Reply::Push(vec![
                b(b"pmessage"),
                b(p),
                b(&self.channel),
                b(&self.payload),
            ]),
        }
    }
}

/// Where a session receives messages: the sending half lives in the registry.
#[derive(Debug, Clone)]
struct Mailbox {
    tx: mpsc::Sender<Message>,
    /// Set when a message did not fit: the transport closes the connection.
    overflow: Arc<AtomicBool>,
}

impl Mailbox {
    fn deliver(&self, m: Message) {
        if self.tx.try_send(m).is_err() {
            self.overflow.store(true, Ordering::Release);
        }
    }
}

/// Every subscription of every client.
#[derive(Default)]
pub(crate) struct PubSub {
    inner: Mutex<Registry>,
}

#[derive(Default)]
struct Registry {
    channels: HashMap<Vec<u8>, HashMap<u64, Mailbox>>,
    patterns: HashMap<Vec<u8>, HashMap<u64, Mailbox>>,
    shards: HashMap<Vec<u8>, HashMap<u64, Mailbox>>,
}

/// What a subscription names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Channel,
    Pattern,
    Shard,
}

impl Kind {
    fn subscribe_word(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"subscribe",
            Kind::Pattern => b"psubscribe",
            Kind::Shard => b"ssubscribe",
        }
    }
    fn unsubscribe_word(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"unsubscribe",
            Kind::Pattern => b"punsubscribe",
            Kind::Shard => b"sunsubscribe",
        }
    }
}

impl Registry {
    fn map(&mut self, kind: Kind) -> &mut HashMap<Vec<u8>, HashMap<u64, Mailbox>> {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shards,
        }
    }
}

/// One session's subscriptions and its mailbox.
#[derive(Debug)]
pub(crate) struct Subscriber {
    channels: BTreeSet<Vec<u8>>,
    patterns: BTreeSet<Vec<u8>>,
    shards: BTreeSet<Vec<u8>>,
    mailbox: Mailbox,
    rx: mpsc::Receiver<Message>,
}

impl Subscriber {
    fn new() -> Subscriber {
        let (tx, rx) = mpsc::channel(MAILBOX_MESSAGES);
        Subscriber {
            channels: BTreeSet::new(),
            patterns: BTreeSet::new(),
            shards: BTreeSet::new(),
            mailbox: Mailbox {
                tx,
                overflow: Arc::new(AtomicBool::new(false)),
            },
            rx,
        }
    }

    /// What a (un)subscribe reply of `kind` counts: channels and patterns together,
    /// shard channels apart (as Redis counts them).
    fn count(&self, kind: Kind) -> i64 {
        match kind {
            Kind::Shard => self.shards.len() as i64,
            _ => (self.channels.len() + self.patterns.len()) as i64,
        }
    }

    fn set(&mut self, kind: Kind) -> &mut BTreeSet<Vec<u8>> {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shards,
        }
    }

    /// The next message; `None` when the mailbox overflowed (close the connection).
    pub(crate) async fn next(&mut self) -> Option<Message> {
        if self.mailbox.overflow.load(Ordering::Acquire) {
            return None;
        }
        let m = self.rx.recv().await;
        if self.mailbox.overflow.load(Ordering::Acquire) {
            return None;
        }
        m
    }

    /// Subscriptions by kind: channels, patterns, shard channels.
    pub(crate) fn counts(&self) -> (u64, u64, u64) {
        (
            self.channels.len() as u64,
            self.patterns.len() as u64,
            self.shards.len() as u64,
        )
    }

    /// Whether the session is in subscribed mode (RESP2 then takes only a few commands).
    pub(crate) fn active(&self) -> bool {
        !(self.channels.is_empty() && self.patterns.is_empty() && self.shards.is_empty())
    }
}

impl PubSub {
    /// Delivers `payload` on `channel` (a shard channel when `shard`); returns how many
    /// subscriptions received it.
    fn publish(&self, channel: &[u8], payload: &[u8], shard: bool) -> i64 {
        let reg = self.inner.lock();
        let channel: Arc<[u8]> = channel.into();
        let payload: Arc<[u8]> = payload.into();
        let mut n = 0;
        let direct = if shard { &reg.shards } else { &reg.channels };
        if let Some(subs) = direct.get(&*channel) {
            for mb in subs.values() {
                mb.deliver(Message {
                    shard,
                    pattern: None,
                    channel: channel.clone(),
                    payload: payload.clone(),
                });
                n += 1;
            }
        }
        if shard {
            return n;
        }
        for (pattern, subs) in &reg.patterns {
            if glob_match(pattern, &channel, false) {
                let pattern: Arc<[u8]> = pattern.as_slice().into();
                for mb in subs.values() {
                    mb.deliver(Message {
                        shard: false,
                        pattern: Some(pattern.clone()),
                        channel: channel.clone(),
                        payload: payload.clone(),
                    });
                    n += 1;
                }
            }
        }
        n
    }

    /// Forgets every subscription of client `id` (it disconnected).
    pub(crate) fn forget(&self, id: u64, sub: &Subscriber) {
        let mut reg = self.inner.lock();
        for c in &sub.channels {
            remove(&mut reg.channels, c, id);
        }
        for p in &sub.patterns {
            remove(&mut reg.patterns, p, id);
        }
        for c in &sub.shards {
            remove(&mut reg.shards, c, id);
        }
    }
}

fn remove(map: &mut HashMap<Vec<u8>, HashMap<u64, Mailbox>>, name: &[u8], id: u64) {
    if let Some(subs) = map.get_mut(name) {
        subs.remove(&id);
        if subs.is_empty() {
            map.remove(name);
        }
    }
}

fn bulk(s: &[u8]) -> Reply {
    Reply::Bulk(s.to_vec().into())
}

/// Whether a command may run in RESP2's subscribed mode.
pub(crate) fn allowed_while_subscribed(name: &str) -> bool {
    matches!(
        name,
        "subscribe"
            | "unsubscribe"
            | "psubscribe"
            | "punsubscribe"
            | "ssubscribe"
            | "sunsubscribe"
            | "ping"
            | "quit"
            | "reset"
    )
}

/// SUBSCRIBE, PSUBSCRIBE and SSUBSCRIBE.
fn subscribe(ctx: &mut Ctx<'_>, names: &[&[u8]], kind: Kind) -> CmdResult {
    let id = ctx.st.id;
    let sub = ctx.st.pubsub.get_or_insert_with(Subscriber::new);
    let mut reg = ctx.engine.pubsub.inner.lock();
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        if sub.set(kind).insert(name.to_vec()) {
            reg.map(kind)
                .entry(name.to_vec())
                .or_default()
                .insert(id, sub.mailbox.clone());
        }
        out.push(Reply::Push(vec![
            bulk(kind.subscribe_word()),
            bulk(name),
            Reply::Integer(sub.count(kind)),
        ]));
    }
    Ok(Reply::Multi(out))
}

/// UNSUBSCRIBE, PUNSUBSCRIBE and SUNSUBSCRIBE (every subscription of the kind without
/// arguments).
fn unsubscribe(ctx: &mut Ctx<'_>, names: &[&[u8]], kind: Kind) -> CmdResult {
    let id = ctx.st.id;
    let word = kind.unsubscribe_word();
    let sub = ctx.st.pubsub.get_or_insert_with(Subscriber::new);
    let mut reg = ctx.engine.pubsub.inner.lock();
    let targets: Vec<Vec<u8>> = if names.is_empty() {
        sub.set(kind).iter().cloned().collect()
    } else {
        names.iter().map(|n| n.to_vec()).collect()
    };
    let mut out = Vec::new();
    for name in &targets {
        if sub.set(kind).remove(name) {
            remove(reg.map(kind), name, id);
        }
        out.push(Reply::Push(vec![
            bulk(word),
            bulk(name),
            Reply::Integer(sub.count(kind)),
        ]));
    }
    if out.is_empty() {
        out.push(Reply::Push(vec![
            bulk(word),
            Reply::Nil,
            Reply::Integer(sub.count(kind)),
        ]));
    }
    Ok(Reply::Multi(out))
}

pub(crate) fn subscribe_cmd(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    subscribe(ctx, args.get(1..).unwrap_or_default(), Kind::Channel)
}

pub(crate) fn ssubscribe(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    subscribe(ctx, args.get(1..).unwrap_or_default(), Kind::Shard)
}

pub(crate) fn sunsubscribe(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    unsubscribe(ctx, args.get(1..).unwrap_or_default(), Kind::Shard)
}

pub(crate) fn spublish(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let channel = args.get(1).copied().unwrap_or_default();
    let payload = args.get(2).copied().unwrap_or_default();
    Ok(Reply::Integer(
        ctx.engine.pubsub.publish(channel, payload, true),
    ))
}

pub(crate) fn psubscribe(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    subscribe(ctx, args.get(1..).unwrap_or_default(), Kind::Pattern)
}

pub(crate) fn unsubscribe_cmd(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    unsubscribe(ctx, args.get(1..).unwrap_or_default(), Kind::Channel)
}

pub(crate) fn punsubscribe(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    unsubscribe(ctx, args.get(1..).unwrap_or_default(), Kind::Pattern)
}

pub(crate) fn publish(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let channel = args.get(1).copied().unwrap_or_default();
    let payload = args.get(2).copied().unwrap_or_default();
    Ok(Reply::Integer(
        ctx.engine.pubsub.publish(channel, payload, false),
    ))
}

/// PUBSUB CHANNELS [pattern] | NUMSUB [channel ...] | NUMPAT | SHARDCHANNELS [pattern] |
/// SHARDNUMSUB [channel ...].
pub(crate) fn pubsub(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sub =
        String::from_utf8_lossy(args.get(1).copied().unwrap_or_default()).to_ascii_lowercase();
    let reg = ctx.engine.pubsub.inner.lock();
    match sub.as_str() {
        "channels" | "shardchannels" if args.len() <= 3 => {
            let pattern = args.get(2).copied();
            let map = if sub == "channels" {
                &reg.channels
            } else {
                &reg.shards
            };
            let mut names: Vec<&Vec<u8>> = map
                .keys()
                .filter(|c| pattern.is_none_or(|p| glob_match(p, c, false)))
                .collect();
            names.sort();
            Ok(Reply::Array(names.into_iter().map(|c| bulk(c)).collect()))
        }
        "numsub" => {
            let mut out = Vec::new();
            for c in args.iter().skip(2) {
                out.push(bulk(c));
                out.push(Reply::Integer(
                    reg.channels.get(*c).map_or(0, |s| s.len() as i64),
                ));
            }
            Ok(Reply::Array(out))
        }
        "numpat" if args.len() == 2 => Ok(Reply::Integer(
            reg.patterns.values().map(|s| s.len() as i64).sum(),
        )),
        _ => Err(Fail::err(format!(
            "unknown subcommand or wrong number of arguments for '{sub}'. Try PUBSUB HELP."
        ))),
    }
}

#[cfg(test)]
mod tests;
