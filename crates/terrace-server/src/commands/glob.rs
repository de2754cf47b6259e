//! Redis glob patterns (`*`, `?`, `[a-z]`, `[^x]`, `\` escapes) for KEYS, SCAN MATCH and
//! CONFIG GET.

/// Whether `text` matches `pattern` as Redis's `stringmatchlen` decides.
pub(crate) fn glob_match(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
    let eq = |a: u8, b: u8| {
        if nocase {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    let (mut p, mut t) = (0usize, 0usize);
    // Backtracking point for the last `*`: (pattern index after it, text index).
    let mut star: Option<(usize, usize)> = None;
    loop {
        if let Some(&pc) = pattern.get(p) {
            let step = match pc {
                b'*' => {
                    while pattern.get(p) == Some(&b'*') {
                        p += 1;
                    }
                    if p == pattern.len() {
                        return true;
                    }
                    star = Some((p, t));
                    continue;
                }
                b'?' => text.get(t).map(|_| p + 1),
                b'[' => text.get(t).and_then(|&c| class(pattern, p + 1, c, &eq)),
                b'\\' if p + 1 < pattern.len() => match (pattern.get(p + 1), text.get(t)) {
                    (Some(&e), Some(&c)) if eq(e, c) => Some(p + 2),
                    _ => None,
                },
                _ => match text.get(t) {
                    Some(&c) if eq(pc, c) => Some(p + 1),
                    _ => None,
                },
            };
            if let Some(next) = step {
                p = next;
                t += 1;
                continue;
            }
        } else if t == text.len() {
            return true;
        }
        match star {
            Some((sp, st)) if st < text.len() => {
                star = Some((sp, st + 1));
                p = sp;
                t = st + 1;
            }
            _ => return false,
        }
    }
}

/// Matches `c` against the class starting after `[` at `start`; returns the pattern index
/// after the closing `]` on a match.
fn class(pattern: &[u8], start: usize, c: u8, eq: &dyn Fn(u8, u8) -> bool) -> Option<usize> {
    let mut i = start;
    let negate = pattern.get(i) == Some(&b'^');
    if negate {
        i += 1;
    }
    let mut matched = false;
    loop {
        match pattern.get(i) {
            // An unterminated class ends at the pattern's end, as in Redis.
            None => break,
            Some(b']') => {
                i += 1;
                break;
            }
            Some(b'\\') if i + 1 < pattern.len() => {
                if pattern.get(i + 1).is_some_and(|&e| eq(e, c)) {
                    matched = true;
                }
                i += 2;
            }
            Some(&lo) if pattern.get(i + 1) == Some(&b'-') && i + 2 < pattern.len() => {
                let hi = pattern.get(i + 2).copied().unwrap_or(lo);
                let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
                if (lo..=hi).contains(&c) {
                    matched = true;
                }
                i += 3;
            }
            Some(&x) => {
                if eq(x, c) {
                    matched = true;
                }
                i += 1;
            }
        }
    }
    (matched != negate).then_some(i)
}
