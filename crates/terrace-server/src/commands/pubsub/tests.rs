use crate::commands::tests::{bulk, engine, run};
use crate::resp::Reply;

fn push(items: Vec<Reply>) -> Reply {
    Reply::Push(items)
}

/// The messages waiting in `s`'s mailbox, as replies.
fn drain(s: &mut crate::commands::Session) -> Vec<Reply> {
    let mut out = Vec::new();
    if let Some(sub) = s.st.pubsub.as_mut() {
        while let Ok(m) = sub.rx.try_recv() {
            out.push(m.reply());
        }
    }
    out
}

#[test]
fn messages_reach_channel_and_pattern_subscribers() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut a = e.connect("a".into()).unwrap();
    let mut b = e.connect("b".into()).unwrap();
    let mut p = e.connect("p".into()).unwrap();
    assert_eq!(
        run(&mut a, "SUBSCRIBE news sport"),
        Reply::Multi(vec![
            push(vec![bulk("subscribe"), bulk("news"), Reply::Integer(1)]),
            push(vec![bulk("subscribe"), bulk("sport"), Reply::Integer(2)]),
        ])
    );
    assert_eq!(
        run(&mut p, "PSUBSCRIBE n*"),
        Reply::Multi(vec![push(vec![
            bulk("psubscribe"),
            bulk("n*"),
            Reply::Integer(1)
        ])])
    );
    assert_eq!(run(&mut b, "PUBLISH news hello"), Reply::Integer(2));
    assert_eq!(run(&mut b, "PUBLISH weather rain"), Reply::Integer(0));
    assert_eq!(
        drain(&mut a),
        vec![push(vec![bulk("message"), bulk("news"), bulk("hello")])]
    );
    assert_eq!(
        drain(&mut p),
        vec![push(vec![
            bulk("pmessage"),
            bulk("n*"),
            bulk("news"),
            bulk("hello")
        ])]
    );
    assert_eq!(
        run(&mut b, "PUBSUB CHANNELS"),
        Reply::Array(vec![bulk("news"), bulk("sport")])
    );
    assert_eq!(
        run(&mut b, "PUBSUB NUMSUB news nothing"),
        Reply::Array(vec![
            bulk("news"),
            Reply::Integer(1),
            bulk("nothing"),
            Reply::Integer(0)
        ])
    );
    assert_eq!(run(&mut b, "PUBSUB NUMPAT"), Reply::Integer(1));
    // Subscribed (RESP2): only pub/sub commands and PING, which answers as a push.
    assert!(run(&mut a, "GET k")
        .to_string_lossy()
        .contains("only (P|S)SUBSCRIBE"));
    assert_eq!(run(&mut a, "PING"), push(vec![bulk("pong"), bulk("")]));
    assert_eq!(
        run(&mut a, "UNSUBSCRIBE"),
        Reply::Multi(vec![
            push(vec![bulk("unsubscribe"), bulk("news"), Reply::Integer(1)]),
            push(vec![bulk("unsubscribe"), bulk("sport"), Reply::Integer(0)]),
        ])
    );
    assert_eq!(run(&mut a, "GET k"), Reply::Nil, "no longer subscribed");
    assert_eq!(run(&mut b, "PUBLISH news again"), Reply::Integer(1));
    // A client that goes away takes its subscriptions with it.
    drop(p);
    assert_eq!(run(&mut b, "PUBLISH news again"), Reply::Integer(0));
    assert_eq!(run(&mut b, "PUBSUB NUMPAT"), Reply::Integer(0));
}

#[test]
fn resp3_takes_every_command_while_subscribed_and_unsubscribe_without_any() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut a = e.connect("a".into()).unwrap();
    run(&mut a, "HELLO 3");
    run(&mut a, "SUBSCRIBE c");
    assert_eq!(run(&mut a, "SET k v"), Reply::Ok);
    let mut b = e.connect("b".into()).unwrap();
    assert_eq!(
        run(&mut b, "PUNSUBSCRIBE"),
        Reply::Multi(vec![push(vec![
            bulk("punsubscribe"),
            Reply::Nil,
            Reply::Integer(0)
        ])])
    );
}
