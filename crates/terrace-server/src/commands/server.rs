//! Connection and server commands: PING, ECHO, AUTH, HELLO, SELECT, QUIT, INFO, CONFIG,
//! CLIENT, COMMAND, SHUTDOWN, TIME.

use super::arg::arg;
use std::sync::atomic::Ordering;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::arg::{int, is};
use super::glob::glob_match;
use super::table::{CommandSpec, COMMANDS};
use super::{Action, CmdResult, Ctx, Fail};
use crate::resp::{Protocol, Reply};

/// The Redis version reported to clients (they gate features on it).
pub(crate) const REDIS_VERSION: &str = "7.0.15";

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub(crate) fn ping(_ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    match args.len() {
        1 => Ok(Reply::Status("PONG".to_string())),
        2 => Ok(Reply::Bulk(arg(args, 1).to_vec().into())),
        _ => Err(Fail::err("wrong number of arguments for 'ping' command")),
    }
}

pub(crate) fn echo(_ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    Ok(Reply::Bulk(arg(args, 1).to_vec().into()))
}

pub(crate) fn time(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    let micros = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(ctx.now_ms * 1000, |d| d.as_micros() as u64);
    Ok(Reply::Array(vec![
        Reply::Bulk((micros / 1_000_000).to_string().into_bytes().into()),
        Reply::Bulk((micros % 1_000_000).to_string().into_bytes().into()),
    ]))
}

/// Whether `given` is the password `required`, in time independent of both: their
/// SHA-256 digests are compared in constant time, so neither a matching prefix nor the
/// length shows in the time AUTH takes.
pub(crate) fn password_matches(given: &[u8], required: &[u8]) -> bool {
    let given = Sha256::digest(given);
    let required = Sha256::digest(required);
    given.as_slice().ct_eq(required.as_slice()).into()
}

/// Checks a user and password against `requirepass`.
fn check_password(ctx: &mut Ctx<'_>, user: &[u8], pass: &[u8]) -> Result<(), Fail> {
    let required = ctx.engine.config.read().requirepass.clone();
    if required.is_empty() && user == b"default" {
        ctx.st.authenticated = true;
        return Ok(());
    }
    if user == b"default" && password_matches(pass, required.as_bytes()) {
        ctx.st.authenticated = true;
        return Ok(());
    }
    Err(Fail::Reply(Reply::Error(
        "WRONGPASS invalid username-password pair or user is disabled.".to_string(),
    )))
}

pub(crate) fn auth(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (user, pass) = match args.len() {
        2 => (b"default".as_slice(), arg(args, 1)),
        3 => (arg(args, 1), arg(args, 2)),
        _ => return Err(Fail::syntax()),
    };
    if args.len() == 2 && !ctx.engine.requires_auth() {
        return Err(Fail::err(
            "AUTH <password> called without any password configured for the default user. \
             Are you sure your configuration is correct?",
        ));
    }
    check_password(ctx, user, pass)?;
    Ok(Reply::Ok)
}

pub(crate) fn hello(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let mut proto = ctx.st.protocol;
    let mut i = 1;
    if let Some(v) = args.get(1) {
        proto = match int(v) {
            Ok(2) => Protocol::Resp2,
            Ok(3) => Protocol::Resp3,
            _ => {
                return Err(Fail::Reply(Reply::Error(
                    "NOPROTO unsupported protocol version".to_string(),
                )))
            }
        };
        i = 2;
    }
    let mut name = None;
    while let Some(opt) = args.get(i) {
        if is(opt, "auth") && args.len() > i + 2 {
            check_password(ctx, arg(args, i + 1), arg(args, i + 2))?;
            i += 3;
        } else if is(opt, "setname") && args.len() > i + 1 {
            name = Some(text(arg(args, i + 1)));
            i += 2;
        } else {
            return Err(Fail::err(format!(
                "Syntax error in HELLO option '{}'",
                text(opt)
            )));
        }
    }
    if !ctx.st.authenticated && ctx.engine.requires_auth() {
        return Err(Fail::Reply(Reply::Error(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the \
             HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and \
             select the RESP protocol version at the same time"
                .to_string(),
        )));
    }
    if let Some(n) = name {
        set_name(ctx, n.as_bytes())?;
    }
    ctx.st.protocol = proto;
    let b = |s: &str| Reply::Bulk(s.as_bytes().to_vec().into());
    Ok(Reply::Map(vec![
        (b("server"), b("redis")),
        (b("version"), b(REDIS_VERSION)),
        (
            b("proto"),
            Reply::Integer(if proto == Protocol::Resp3 { 3 } else { 2 }),
        ),
        (b("id"), Reply::Integer(ctx.st.id as i64)),
        (b("mode"), b("standalone")),
        (b("role"), b("master")),
        (b("modules"), Reply::Array(Vec::new())),
    ]))
}

pub(crate) fn select(_ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    match int(arg(args, 1)) {
        Ok(0) => Ok(Reply::Ok),
        Ok(_) => Err(Fail::err("DB index is out of range")),
        Err(e) => Err(e),
    }
}

pub(crate) fn quit(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    ctx.st.action = Some(Action::Close);
    Ok(Reply::Ok)
}

pub(crate) fn shutdown(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    for a in args.iter().skip(1) {
        if !["nosave", "save", "now", "force", "abort"]
            .iter()
            .any(|o| is(a, o))
        {
            return Err(Fail::syntax());
        }
        if is(a, "abort") {
            return Err(Fail::err("No shutdown in progress."));
        }
    }
    ctx.st.action = Some(Action::Shutdown);
    Ok(Reply::Ok)
}

pub(crate) fn info(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let wanted: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| text(a).to_ascii_lowercase())
        .collect();
    Ok(Reply::Bulk(
        super::info::render(ctx, &wanted)?.into_bytes().into(),
    ))
}

/// The settings CONFIG GET reports, with their current values.
fn config_pairs(ctx: &Ctx<'_>) -> Vec<(&'static str, String)> {
    let c = ctx.engine.config.read();
    let yn = |b: bool| if b { "yes" } else { "no" }.to_string();
    vec![
        ("bind", c.bind.clone()),
        ("port", c.port.to_string()),
        ("dir", c.dir.display().to_string()),
        ("requirepass", c.requirepass.clone()),
        ("maxclients", c.maxclients.to_string()),
        ("protected-mode", yn(c.protected_mode)),
        ("appendonly", "yes".to_string()),
        ("appendfsync", c.fsync.as_str().to_string()),
        ("save", String::new()),
        ("databases", "1".to_string()),
        ("proto-max-bulk-len", c.proto_max_bulk_len.to_string()),
        (
            "client-query-buffer-limit",
            c.client_query_buffer_limit.to_string(),
        ),
        ("io-threads", c.threads.to_string()),
        ("maxmemory", "0".to_string()),
        ("timeout", c.timeout.to_string()),
    ]
}

pub(crate) fn config(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sub = text(arg(args, 1)).to_ascii_lowercase();
    match sub.as_str() {
        "get" if args.len() >= 3 => {
            let pairs = config_pairs(ctx);
            let mut out = Vec::new();
            for (name, value) in pairs {
                if args
                    .iter()
                    .skip(2)
                    .any(|p| glob_match(p, name.as_bytes(), true))
                {
                    out.push((
                        Reply::Bulk(name.as_bytes().to_vec().into()),
                        Reply::Bulk(value.into_bytes().into()),
                    ));
                }
            }
            Ok(Reply::Map(out))
        }
        "set" if args.len() >= 4 && args.len().is_multiple_of(2) => {
            let pairs: Vec<(&[u8], &[u8])> = args
                .get(2..)
                .unwrap_or_default()
                .chunks_exact(2)
                .filter_map(|p| match p {
                    [k, v] => Some((*k, *v)),
                    _ => None,
                })
                .collect();
            ctx.engine.config_set(&pairs).map_err(Fail::err)?;
            Ok(Reply::Ok)
        }
        "resetstat" if args.len() == 2 => Ok(Reply::Ok),
        "get" | "set" | "resetstat" => Err(Fail::err(format!(
            "wrong number of arguments for 'config|{sub}' command"
        ))),
        _ => Err(Fail::err(format!(
            "unknown subcommand '{}'. Try CONFIG HELP.",
            text(arg(args, 1))
        ))),
    }
}

fn set_name(ctx: &mut Ctx<'_>, name: &[u8]) -> Result<(), Fail> {
    if name.iter().any(|&c| c <= b' ' || c > b'~') {
        return Err(Fail::err(
            "Client names cannot contain spaces, newlines or special characters.",
        ));
    }
    if let Some(c) = ctx.engine.clients.lock().get_mut(&ctx.st.id) {
        c.name = text(name);
    }
    Ok(())
}

fn client_line(id: u64, c: &super::engine::ClientInfo) -> String {
    use std::sync::atomic::Ordering::Relaxed;
    let live = &c.live;
    let age = c.connected_at.map_or(0, |t| t.elapsed().as_secs());
    let idle = crate::value::now_ms().saturating_sub(live.last_active_ms.load(Relaxed)) / 1000;
    let [sub, psub, ssub] = [0, 1, 2].map(|i| live.subs[i].load(Relaxed));
    let multi = live.multi.load(Relaxed);
    let mut flags = String::new();
    if sub + psub + ssub > 0 {
        flags.push('P');
    }
    if multi >= 0 {
        flags.push('x');
    }
    if live.blocked.load(Relaxed) {
        flags.push('b');
    }
    if flags.is_empty() {
        flags.push('N');
    }
    let cmd = *live.last_cmd.lock();
    let (laddr, fd) = live.socket.lock().clone();
    let qbuf = live.qbuf.load(Relaxed);
    let qbuf_free = live.qbuf_free.load(Relaxed);
    let obl = live.obl.load(Relaxed);
    let multi_mem = live.multi_mem.load(Relaxed);
    let events = if obl > 0 { "rw" } else { "r" };
    let rbs = qbuf + qbuf_free;
    let tot_mem = rbs + obl + multi_mem;
    format!(
        "id={id} addr={} laddr={laddr} fd={fd} name={} age={age} idle={idle} flags={flags} \
         db=0 sub={sub} psub={psub} ssub={ssub} multi={multi} qbuf={qbuf} \
         qbuf-free={qbuf_free} argv-mem=0 multi-mem={multi_mem} rbs={rbs} rbp={rbs} \
         obl={obl} oll=0 omem={obl} tot-mem={tot_mem} events={events} cmd={cmd} \
         user=default redir=-1 resp={} lib-name={} lib-ver={}\n",
        c.addr,
        c.name,
        live.resp.load(Relaxed),
        c.lib_name,
        c.lib_ver
    )
}

/// CLIENT LIST [TYPE normal|master|replica|slave|pubsub] or CLIENT LIST ID id [id ...],
/// as Redis 7 parses them: one filter or none, IDs answered in the order given.
fn client_list(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    use std::sync::atomic::Ordering::Relaxed;
    let clients = ctx.engine.clients.lock();
    let filter = args.get(2).map(|a| text(a).to_ascii_lowercase());
    let out: String = match (filter.as_deref(), args.len()) {
        (None, _) => clients.iter().map(|(id, c)| client_line(*id, c)).collect(),
        (Some("type"), 4) => {
            let name = text(arg(args, 3));
            // No replication: masters and replicas never connect.
            let pubsub = match name.to_ascii_lowercase().as_str() {
                "normal" => false,
                "pubsub" => true,
                "master" | "replica" | "slave" => {
                    return Ok(Reply::Bulk(Vec::new().into()));
                }
                _ => return Err(Fail::err(format!("Unknown client type '{name}'"))),
            };
            clients
                .iter()
                .filter(|(_, c)| c.live.subs.iter().any(|s| s.load(Relaxed) > 0) == pubsub)
                .map(|(id, c)| client_line(*id, c))
                .collect()
        }
        (Some("id"), n) if n > 3 => {
            let mut out = String::new();
            for a in args.iter().skip(3) {
                let id = super::arg::parse_i64(a).ok_or_else(|| Fail::err("Invalid client ID"))?;
                let found = u64::try_from(id)
                    .ok()
                    .and_then(|id| clients.get(&id).map(|c| (id, c)));
                if let Some((id, c)) = found {
                    out.push_str(&client_line(id, c));
                }
            }
            out
        }
        _ => return Err(Fail::syntax()),
    };
    Ok(Reply::Bulk(out.into_bytes().into()))
}

/// CLIENT KILL ip:port, or CLIENT KILL [ID id] [ADDR ip:port] [SKIPME yes|no] ...
fn client_kill(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let old_form = args.len() == 3;
    let (mut id, mut addr, mut skipme) = (None, None, true);
    if old_form {
        addr = Some(text(arg(args, 2)));
    } else {
        let mut i = 2;
        while i < args.len() {
            let (opt, value) = (
                text(arg(args, i)).to_ascii_lowercase(),
                text(arg(args, i + 1)),
            );
            if i + 1 >= args.len() {
                return Err(Fail::syntax());
            }
            match opt.as_str() {
                "id" => {
                    id = Some(
                        value
                            .parse::<u64>()
                            .map_err(|_| Fail::err("client-id should be greater than 0"))?,
                    );
                }
                "addr" => addr = Some(value),
                "skipme" => {
                    skipme = match value.to_ascii_lowercase().as_str() {
                        "yes" => true,
                        "no" => false,
                        _ => return Err(Fail::syntax()),
                    };
                }
                _ => return Err(Fail::syntax()),
            }
            i += 2;
        }
    }
    let clients = ctx.engine.clients.lock();
    let mut killed = 0i64;
    for (cid, c) in clients.iter() {
        let me = *cid == ctx.st.id;
        let matches = id.is_none_or(|i| i == *cid) && addr.as_ref().is_none_or(|a| *a == c.addr);
        if matches && !(me && skipme && !old_form) {
            c.live
                .killed
                .store(true, std::sync::atomic::Ordering::Release);
            c.live.attention.notify_one();
            if me {
                ctx.st.action = Some(super::Action::Close);
            }
            killed += 1;
        }
    }
    if old_form {
        if killed == 0 {
            return Err(Fail::err("No such client"));
        }
        return Ok(Reply::Ok);
    }
    Ok(Reply::Integer(killed))
}

pub(crate) fn client(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sub = text(arg(args, 1)).to_ascii_lowercase();
    match (sub.as_str(), args.len()) {
        ("setname", 3) => {
            set_name(ctx, arg(args, 2))?;
            Ok(Reply::Ok)
        }
        ("getname", 2) => {
            let name = ctx
                .engine
                .clients
                .lock()
                .get(&ctx.st.id)
                .map(|c| c.name.clone());
            Ok(match name {
                Some(n) if !n.is_empty() => Reply::Bulk(n.into_bytes().into()),
                _ => Reply::Nil,
            })
        }
        ("id", 2) => Ok(Reply::Integer(ctx.st.id as i64)),
        ("setinfo", 4) => {
            let attr = text(arg(args, 2)).to_ascii_lowercase();
            let value = text(arg(args, 3));
            let mut clients = ctx.engine.clients.lock();
            let Some(c) = clients.get_mut(&ctx.st.id) else {
                return Ok(Reply::Ok);
            };
            match attr.as_str() {
                "lib-name" => c.lib_name = value,
                "lib-ver" => c.lib_ver = value,
                _ => {
                    return Err(Fail::err(format!(
                        "Unrecognized option '{}'",
                        text(arg(args, 2))
                    )))
                }
            }
            Ok(Reply::Ok)
        }
        ("info", 2) => {
            let clients = ctx.engine.clients.lock();
            let out = clients
                .get(&ctx.st.id)
                .map(|c| client_line(ctx.st.id, c))
                .unwrap_or_default();
            Ok(Reply::Bulk(out.into_bytes().into()))
        }
        ("list", _) => client_list(ctx, args),
        ("no-evict" | "no-touch", 3) => Ok(Reply::Ok),
        ("kill", n) if n >= 3 => client_kill(ctx, args),
        _ => Err(Fail::err(format!(
            "unknown subcommand or wrong number of arguments for '{}'. Try CLIENT HELP.",
            text(arg(args, 1))
        ))),
    }
}

fn command_info(c: &CommandSpec) -> Reply {
    Reply::Array(vec![
        Reply::Bulk(c.name.as_bytes().to_vec().into()),
        Reply::Integer(i64::from(c.arity)),
        Reply::Set(
            c.flag_names()
                .into_iter()
                .map(|f| Reply::Status(f.to_string()))
                .collect(),
        ),
        Reply::Integer(i64::from(c.first_key)),
        Reply::Integer(i64::from(c.last_key)),
        Reply::Integer(i64::from(c.step)),
        Reply::Set(Vec::new()),
        Reply::Set(Vec::new()),
        Reply::Array(Vec::new()),
        Reply::Array(Vec::new()),
    ])
}

fn command_docs(c: &CommandSpec) -> (Reply, Reply) {
    let b = |s: &str| Reply::Bulk(s.as_bytes().to_vec().into());
    (
        b(c.name),
        Reply::Map(vec![
            (b("summary"), b(c.summary)),
            (b("since"), b("1.0.0")),
            (b("group"), b(c.group)),
        ]),
    )
}

pub(crate) fn command(_ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sub = text(arg(args, 1)).to_ascii_lowercase();
    let named = |i: usize| -> Vec<Option<&'static CommandSpec>> {
        args.iter()
            .skip(i)
            .map(|n| super::table::lookup(&n.to_ascii_lowercase()))
            .collect()
    };
    match sub.as_str() {
        "" if args.len() == 1 => Ok(Reply::Array(COMMANDS.iter().map(command_info).collect())),
        "count" => Ok(Reply::Integer(COMMANDS.len() as i64)),
        "info" => Ok(Reply::Array(if args.len() == 2 {
            COMMANDS.iter().map(command_info).collect()
        } else {
            named(2)
                .into_iter()
                .map(|c| c.map_or(Reply::Nil, command_info))
                .collect()
        })),
        "docs" => Ok(Reply::Map(if args.len() == 2 {
            COMMANDS.iter().map(command_docs).collect()
        } else {
            named(2).into_iter().flatten().map(command_docs).collect()
        })),
        "list" => Ok(Reply::Array(
            COMMANDS
                .iter()
                .map(|c| Reply::Bulk(c.name.as_bytes().to_vec().into()))
                .collect(),
        )),
        _ => Err(Fail::err(format!(
            "unknown subcommand '{}'. Try COMMAND HELP.",
            text(arg(args, 1))
        ))),
    }
}

/// Connected clients, for INFO.
pub(crate) fn connected(ctx: &Ctx<'_>) -> usize {
    ctx.engine.clients.lock().len()
}

/// Commands processed, for INFO.
pub(crate) fn commands_processed(ctx: &Ctx<'_>) -> u64 {
    ctx.engine.stats.commands.load(Ordering::Relaxed)
}
