//! The call sites of a whole-project run, kept small until the link.
//!
//! Phase one records every call of a non-client function in each file
//! (`LinkFacts::calls`, arguments normalised as keys and values): millions
//! on a large project, most of them calls the link can never resolve
//! (`list.add(x)`, a minified bundle's own helpers). Held as they are until
//! every file is read, they were most of a run's memory. So a file's calls
//! wait packed ([`PackedCalls`]: MessagePack bytes plus the callee names and
//! caller scopes, [`CallNames`]); once the project is read, [`relevant`]
//! gives the names a call can matter for, and only the calls of those names
//! are unpacked for the link.
//!
//! A call matters only when its callee is the name of a function with
//! Redis ops of its own or of a function calling such a name, and so on
//! (the closure of that "calls" relation): summaries exist only for such
//! functions (`summary`), the link resolves a call only to a summary of its
//! name (`link`), the failure-path analysis follows only deleting
//! functions and their callers (`failure`), and the call-name scan only
//! summarised names (`scan`). Dropping the other calls changes nothing
//! they compute.

use crate::facts::{CallArg, CallSite, FileFacts, FnSig, ScopeId};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// Rounds of the closure before it gives up pruning (deeper than any
/// analysis follows calls: 4 link rounds, 4 failure rounds after them).
const MAX_ROUNDS: usize = 16;

/// The callee name and caller scope of each call of a file.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct CallNames {
    /// (The calls' own texts, shared: unpacked calls point at these.)
    names: Vec<std::sync::Arc<str>>,
    calls: Vec<(u32, ScopeId)>,
    /// The functions packed with the calls ([`PackedCalls::take_idle_functions`]):
    /// each one's scope and whether it takes parameters, all the call-name
    /// scan reads of them (`scan::summarised_names`).
    #[serde(default)]
    functions: Vec<(ScopeId, bool)>,
}

impl CallNames {
    pub fn of(calls: &[CallSite]) -> CallNames {
        let mut ids: HashMap<&str, u32> = HashMap::default();
        let mut out = CallNames::default();
        for c in calls {
            let id = *ids.entry(&*c.callee).or_insert_with(|| {
                out.names.push(std::sync::Arc::clone(&c.callee));
                (out.names.len() - 1) as u32
            });
            out.calls.push((id, c.scope));
        }
        out
    }

    /// How many calls.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// No call.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// The scope of each packed function, and whether it takes parameters.
    pub fn packed_functions(&self) -> &[(ScopeId, bool)] {
        &self.functions
    }

    /// Each call's callee name and caller scope, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, ScopeId)> + '_ {
        self.calls
            .iter()
            .map(|&(id, scope)| (&*self.names[id as usize], scope))
    }
}

/// A file's call sites packed one by one as a front-end makes them (a
/// dense file has one every twenty bytes or so: as values, 112 bytes and
/// 80 an argument, they stood beside the front-end's tokens, calls and
/// structure at its peak). The bytes are those [`PackedCalls::of`] makes of
/// the same sites, kept in chunks of [`SitePacker::CHUNK`] until
/// [`SitePacker::finish`] (one buffer grown by doubling had up to half of
/// its room unused at the peak).
#[derive(Default)]
pub struct SitePacker {
    chunks: Vec<Vec<u8>>,
    /// One site's bytes, before they go to the last chunk.
    scratch: Vec<u8>,
    /// How many bytes the last site took.
    scratch_len: usize,
    /// Each callee's id, its place in `names.names`, found by the name's
    /// hash: 4 bytes a name, where a map keyed by a second `Arc<str>` took
    /// 24 (25.6 kB for the 767 callees of rueidis's mock adapter).
    ids: hashbrown::HashTable<u32>,
    names: CallNames,
}

/// The hash of a callee name in [`SitePacker::ids`].
fn name_hash(name: &str) -> u64 {
    crate::facts::fx_hash(name)
}

impl SitePacker {
    /// (The last chunk is mostly spare: at 64 KiB, that was up to half a
    /// byte per byte of a file of 100 kB.)
    const CHUNK: usize = 16 * 1024;

    /// A packer for `count` sites (the list of their names and scopes
    /// reserved at that size: grown by doubling, half of it could be
    /// spare at the front-end's peak).
    pub fn with_capacity(count: usize) -> SitePacker {
        let mut p = SitePacker::default();
        p.names.calls.reserve_exact(count);
        p
    }

    /// How many sites are packed.
    pub fn len(&self) -> usize {
        self.names.calls.len()
    }

    /// No site is packed.
    pub fn is_empty(&self) -> bool {
        self.names.calls.is_empty()
    }

    /// Packs `site` after the others (a site that cannot be encoded, which
    /// nothing in one can make happen, is left out whole).
    pub fn push(&mut self, site: &CallSite) {
        self.scratch.clear();
        if rmp_serde::encode::write(&mut self.scratch, &PackedSite(site)).is_err() {
            return;
        }
        self.append(site);
    }

    /// [`SitePacker::push`] of a site whose order is not known yet (the
    /// Rust front-end numbers its ops once the file is walked): its order
    /// is packed in the 5 bytes of a MessagePack `uint 32` (decoded as any
    /// other), and where they stand is returned for
    /// [`SitePacker::set_order`]. `None` when the site is left out.
    pub fn push_order_later(&mut self, site: &CallSite) -> Option<OrderAt> {
        // the array of a `PackedSite`'s fields, each packed alone (a field
        // more or less fails
        // `sites_packed_before_their_order_decode_as_packed_with_it`)
        self.scratch.clear();
        self.scratch.push(0x90 | PackedSite::FIELDS as u8);
        let head: [&dyn erased::Field; 2] = [&site.recv, &site.args];
        for f in head {
            f.write(&mut self.scratch).ok()?;
        }
        let at = self.scratch.len();
        self.scratch.push(0xce);
        self.scratch.extend_from_slice(&0u32.to_be_bytes());
        let spans = PackedSite(site).spans();
        let tail: [&dyn erased::Field; 6] = [
            &site.depth,
            &spans[0],
            &spans[1],
            &spans[2],
            &spans[3],
            &site.result_key,
        ];
        for f in tail {
            f.write(&mut self.scratch).ok()?;
        }
        let chunk = self.append(site);
        let c = self.chunks.get(chunk)?;
        let offset = c.len() - self.scratch_len + at + 1;
        Some(OrderAt {
            chunk: chunk as u32,
            offset: offset as u32,
        })
    }

    /// The packer's copy of callee `name`, once a site of it is packed
    /// (else a new one, which the site's packing keeps): a caller needs no
    /// table of callee names of its own beside the packer's.
    pub fn callee(&self, name: &str) -> std::sync::Arc<str> {
        let names = &self.names.names;
        match self
            .ids
            .find(name_hash(name), |&id| *names[id as usize] == *name)
        {
            Some(&id) => std::sync::Arc::clone(&names[id as usize]),
            None => name.into(),
        }
    }

    /// Gives back the spare room of the last chunk once every site is
    /// packed (it stands while the front-end works on; up to
    /// [`SitePacker::CHUNK`] of it was unused).
    pub fn shrink_to_fit(&mut self) {
        if let Some(c) = self.chunks.last_mut() {
            c.shrink_to_fit();
        }
        self.names.calls.shrink_to_fit();
    }

    /// Writes the order of the site packed at `at`.
    pub fn set_order(&mut self, at: OrderAt, order: u32) {
        if let Some(b) = self
            .chunks
            .get_mut(at.chunk as usize)
            .and_then(|c| c.get_mut(at.offset as usize..at.offset as usize + 4))
        {
            b.copy_from_slice(&order.to_be_bytes());
        }
    }

    /// The site in `scratch` after the others; the chunk it went to.
    fn append(&mut self, site: &CallSite) -> usize {
        let n = self.scratch.len();
        self.scratch_len = n;
        if self
            .chunks
            .last()
            .is_none_or(|c| c.capacity() - c.len() < n)
        {
            self.chunks.push(Vec::with_capacity(Self::CHUNK.max(n)));
        }
        if let Some(c) = self.chunks.last_mut() {
            c.extend_from_slice(&self.scratch);
        }
        if self.scratch.capacity() > Self::CHUNK {
            // (a site of a huge argument: its room is not kept for the rest)
            self.scratch = Vec::new();
        }
        let names = &mut self.names.names;
        let id = match self.ids.entry(
            name_hash(&site.callee),
            |&id| names[id as usize] == site.callee,
            |&id| name_hash(&names[id as usize]),
        ) {
            hashbrown::hash_table::Entry::Occupied(e) => *e.get(),
            hashbrown::hash_table::Entry::Vacant(e) => {
                names.push(std::sync::Arc::clone(&site.callee));
                let id = (names.len() - 1) as u32;
                e.insert(id);
                id
            }
        };
        self.names.calls.push((id, site.scope));
        self.chunks.len() - 1
    }

    /// The packed sites; `None` when there are none.
    pub fn finish(self) -> Option<PackedCalls> {
        let count = self.len();
        if count == 0 {
            return None;
        }
        let total: usize = self.chunks.iter().map(Vec::len).sum();
        let mut bytes = Vec::with_capacity(5 + total);
        // the MessagePack array head `rmp_serde` writes for a sequence of
        // `count` (its shortest form)
        match u32::try_from(count).ok()? {
            n @ 0..=15 => bytes.push(0x90 | n as u8),
            n @ 16..=0xffff => {
                bytes.push(0xdc);
                bytes.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                bytes.push(0xdd);
                bytes.extend_from_slice(&n.to_be_bytes());
            }
        }
        for c in self.chunks {
            bytes.extend_from_slice(&c);
        }
        let mut names = self.names;
        names.names.shrink_to_fit();
        names.calls.shrink_to_fit();
        Some(PackedCalls {
            names,
            bytes: PackedBytes::Own(bytes),
            functions: Vec::new(),
        })
    }
}

/// Where a site's order stands in a [`SitePacker`]'s bytes
/// ([`SitePacker::push_order_later`]).
#[derive(Clone, Copy, Debug)]
pub struct OrderAt {
    chunk: u32,
    offset: u32,
}

/// One field of a site packed alone ([`SitePacker::push_order_later`]).
mod erased {
    pub trait Field {
        fn write(&self, out: &mut Vec<u8>) -> Result<(), rmp_serde::encode::Error>;
    }
    impl<T: serde::Serialize> Field for T {
        fn write(&self, out: &mut Vec<u8>) -> Result<(), rmp_serde::encode::Error> {
            rmp_serde::encode::write(out, self)
        }
    }
}

/// A file's calls, packed while the rest of the project is read (and so
/// kept in the phase-one cache: a cached file's calls are not decoded
/// unless the link can use them).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct PackedCalls {
    pub names: CallNames,
    bytes: PackedBytes,
    /// The signatures of the functions with no op of their own, each with
    /// its place among the file's functions (MessagePack); empty until
    /// [`PackedCalls::take_idle_functions`].
    #[serde(default, with = "serde_bytes")]
    functions: Vec<u8>,
}

/// The packed calls' bytes: made in this run, or a range of the cache
/// shard they were read from (a warm run copies no file's calls out of
/// the shard: the shard's bytes stay until the last such range is let go,
/// at the latest when the calls are unpacked). Written as MessagePack
/// bytes either way.
#[derive(Debug)]
enum PackedBytes {
    Own(Vec<u8>),
    Shared(crate::project::cache::Blob),
}

impl std::ops::Deref for PackedBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            PackedBytes::Own(v) => v,
            PackedBytes::Shared(b) => b,
        }
    }
}

impl serde::Serialize for PackedBytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self)
    }
}

impl<'de> serde::Deserialize<'de> for PackedBytes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde_bytes::ByteBuf::deserialize(d).map(|b| PackedBytes::Own(b.into_vec()))
    }
}

/// [`PackedCalls`] as read from a buffer, its call bytes borrowed (the same
/// fields in the same order).
#[derive(serde::Deserialize)]
pub(crate) struct RawPackedCalls<'a> {
    names: CallNames,
    #[serde(borrow)]
    bytes: &'a serde_bytes::Bytes,
    #[serde(default, with = "serde_bytes")]
    functions: Vec<u8>,
}

impl RawPackedCalls<'_> {
    /// The packed calls, their bytes a range of the buffer they were read
    /// from where `share` gives one (else copied).
    pub(crate) fn into_packed(
        self,
        share: impl FnOnce(&[u8]) -> Option<crate::project::cache::Blob>,
    ) -> PackedCalls {
        let bytes = match share(self.bytes) {
            Some(blob) => PackedBytes::Shared(blob),
            None => PackedBytes::Own(self.bytes.to_vec()),
        };
        PackedCalls {
            names: self.names,
            bytes,
            functions: self.functions,
        }
    }
}

impl PackedCalls {
    /// The bytes are a range of a buffer read elsewhere (the cache's).
    pub fn is_shared(&self) -> bool {
        matches!(self.bytes, PackedBytes::Shared(_))
    }

    /// The buffer the bytes are a range of, told apart by its address
    /// (`None` when they are their own).
    pub fn shared_buffer(&self) -> Option<usize> {
        match &self.bytes {
            PackedBytes::Shared(b) => Some(b.buffer_address()),
            PackedBytes::Own(_) => None,
        }
    }

    /// Lets go of the buffer the bytes are a range of: they are copied when
    /// [`PackedCalls::unpack`] with `keep` will read them (unless they are
    /// most of the buffer), else dropped (no call of a kept name: it reads
    /// none). Before the unpacking, so that
    /// the cache's shards are let go before the unpacked calls are built.
    pub fn detach(&mut self, keep: Option<&HashSet<String>>) {
        if !self.is_shared() {
            return;
        }
        let read = keep.is_none_or(|keep| {
            self.names
                .calls
                .iter()
                .any(|&(id, _)| keep.contains(&*self.names.names[id as usize]))
        });
        if read {
            if let PackedBytes::Shared(b) = &self.bytes {
                if !b.is_most_of_its_buffer() {
                    self.bytes = PackedBytes::Own(b.to_vec());
                }
                // (a buffer the calls are most of stays: a file's own cache
                // entry, made in this run; a copy would free little, and
                // be made on another worker's heap than the one freed)
            }
        } else {
            self.bytes = PackedBytes::Own(Vec::new());
        }
    }

    /// Packs `facts.link.calls` (left empty); `None` when there are none
    /// (or they cannot be encoded: they stay where they are).
    pub fn take(facts: &mut FileFacts) -> Option<PackedCalls> {
        let packed = PackedCalls::of(&facts.link.calls)?;
        facts.link.calls = Vec::new();
        Some(packed)
    }

    /// `calls` packed; `None` when there are none or they cannot be encoded.
    pub fn of(calls: &[CallSite]) -> Option<PackedCalls> {
        if calls.is_empty() {
            return None;
        }
        let sites: Vec<PackedSite> = calls.iter().map(PackedSite).collect();
        let mut bytes = rmp_serde::to_vec(&sites).ok()?;
        drop(sites);
        // (the encoder grows its buffer by doubling: up to half of it
        // would wait unused until the link)
        bytes.shrink_to_fit();
        let names = CallNames::of(calls);
        Some(PackedCalls {
            names,
            bytes: PackedBytes::Own(bytes),
            functions: Vec::new(),
        })
    }

    /// Packs the signatures of `facts`' functions that have no op of their
    /// own, beside the calls. Until the link, only the rules' and the
    /// summaries' own reading of a function needs its signature unpacked,
    /// and both read only functions with ops; the others (on a large
    /// project, tens of thousands, each a handful of small strings) are
    /// read again by [`PackedCalls::unpack`]. Once per file: a second call
    /// (or signatures that cannot be encoded) leaves them as they are.
    pub fn take_idle_functions(&mut self, facts: &mut FileFacts) {
        if !self.functions.is_empty() || facts.link.functions.is_empty() {
            return;
        }
        let busy: HashSet<ScopeId> = facts.ops.iter().map(|o| o.scope).collect();
        if facts.link.functions.iter().all(|f| busy.contains(&f.scope)) {
            return;
        }
        let idle: Vec<(u32, &FnSig)> = facts
            .link
            .functions
            .iter()
            .enumerate()
            .filter(|(_, f)| !busy.contains(&f.scope))
            .map(|(i, f)| (i as u32, f))
            .collect();
        let Ok(mut bytes) = rmp_serde::to_vec(&idle) else {
            return;
        };
        bytes.shrink_to_fit();
        self.names.functions = idle
            .iter()
            .map(|(_, f)| (f.scope, !f.params.is_empty()))
            .collect();
        self.functions = bytes;
        facts.link.functions.retain(|f| busy.contains(&f.scope));
        facts.link.functions.shrink_to_fit();
    }

    /// Puts the packed signatures back at their places among `functions`
    /// (those [`PackedCalls::take_idle_functions`] left).
    fn restore_functions(&self, functions: &mut Vec<FnSig>) {
        if self.functions.is_empty() {
            return;
        }
        let idle: Vec<(u32, FnSig)> = rmp_serde::from_slice(&self.functions).unwrap_or_default();
        let mut kept = std::mem::take(functions).into_iter();
        let mut all = Vec::with_capacity(kept.len() + idle.len());
        for (at, f) in idle {
            while all.len() < at as usize {
                match kept.next() {
                    Some(k) => all.push(k),
                    None => break,
                }
            }
            all.push(f);
        }
        all.extend(kept);
        *functions = all;
    }

    /// The calls whose callee is in `keep` (all of them for `None`), in
    /// order; the packed function signatures go back to their places in
    /// `functions` (the file's).
    pub fn unpack(
        self,
        keep: Option<&HashSet<String>>,
        functions: &mut Vec<FnSig>,
    ) -> Vec<CallSite> {
        self.unpack_reaching(keep, None, functions)
    }

    /// [`PackedCalls::unpack`], and a kept call that `reach` says cannot
    /// resolve from file `file` ([`Reach::slim`]) is built without its
    /// receiver and arguments: they are stepped over in the bytes.
    pub fn unpack_reaching(
        self,
        keep: Option<&HashSet<String>>,
        reach: Option<(&Reach, usize)>,
        functions: &mut Vec<FnSig>,
    ) -> Vec<CallSite> {
        self.restore_functions(functions);
        // per name: kept; a call of a name not kept is stepped over in the
        // bytes, never built
        let kept: Vec<bool> = self
            .names
            .names
            .iter()
            .map(|n| keep.is_none_or(|keep| keep.contains(&**n)))
            .collect();
        let wanted = self
            .names
            .calls
            .iter()
            .filter(|(id, _)| kept[*id as usize])
            .count();
        if wanted == 0 {
            return Vec::new();
        }
        let names = &self.names.names;
        let only = Only {
            sites: self.names.calls.iter().map(|&(id, scope)| {
                kept[id as usize].then(|| (std::sync::Arc::clone(&names[id as usize]), scope))
            }),
            wanted,
            reach,
        };
        let mut de = rmp_serde::Deserializer::from_read_ref(&*self.bytes);
        // (shared as they are decoded: `Only`)
        serde::de::DeserializeSeed::deserialize(only, &mut de).unwrap_or_default()
    }
}

/// One shared copy of each callee, receiver and argument text and key of
/// a file's decoded calls, as the front-end shared them (decoded, each call
/// had its own: more than the front-end's facts held): for one call, with
/// the copies shared so far in `texts`.
fn share_one(texts: &mut crate::facts::CallTexts, c: &mut CallSite) {
    c.callee = texts.share_text(&c.callee);
    if let Some(r) = c.recv.as_mut() {
        *r = texts.share_text(r);
    }
    for a in c.args.iter_mut() {
        for t in [&mut a.name, &mut a.keyword, &mut a.ty]
            .into_iter()
            .flatten()
        {
            *t = texts.share_arg_text(t);
        }
        a.key = texts.share_key(&a.key);
    }
}

/// Decodes a packed sequence of calls, building only those given their
/// callee and scope (in order, one item per call; `None` for a call
/// stepped over), each call's texts and keys shared with the calls before
/// it as soon as it is built ([`share_one`]: shared at the end, a facade's
/// 1,100 calls held every copy of `key` at once).
struct Only<'r, I> {
    sites: I,
    wanted: usize,
    /// Builds a call that cannot resolve from this file without its
    /// receiver and arguments ([`Reach::slim`]).
    reach: Option<(&'r Reach, usize)>,
}

impl<'de, I: Iterator<Item = Option<(std::sync::Arc<str>, ScopeId)>>>
    serde::de::DeserializeSeed<'de> for Only<'_, I>
{
    type Value = Vec<CallSite>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, I: Iterator<Item = Option<(std::sync::Arc<str>, ScopeId)>>> serde::de::Visitor<'de>
    for Only<'_, I>
{
    type Value = Vec<CallSite>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a sequence of calls")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        mut self,
        mut seq: A,
    ) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(self.wanted);
        let mut texts = crate::facts::CallTexts::default();
        for site in self.sites.by_ref() {
            if let Some((callee, scope)) = site {
                let seed = SiteSeed {
                    callee,
                    scope,
                    reach: self.reach,
                };
                match seq.next_element_seed(seed)? {
                    Some(mut c) => {
                        share_one(&mut texts, &mut c);
                        out.push(c);
                    }
                    None => break,
                }
            } else if seq.next_element::<serde::de::IgnoredAny>()?.is_none() {
                break;
            }
        }
        Ok(out)
    }
}

/// A [`CallSite`] as packed: its fields but the callee and the scope (the
/// [`CallNames`] beside the bytes hold both, call by call), its two spans
/// as the start and three differences (small numbers, where offsets past
/// 64 KiB took 5 bytes each):
/// `[recv, args, order, depth, start, end - start, name start - start,
/// name end - name start, result_key]`. A dense facade's 6,915 sites took
/// 85 bytes each; the callee, scope and spans were 23 of them.
struct PackedSite<'a>(&'a CallSite);

impl PackedSite<'_> {
    /// The fields of a packed site.
    const FIELDS: usize = 9;

    /// The spans' start and differences, as packed.
    fn spans(&self) -> [i64; 4] {
        let (span, name) = (self.0.span, self.0.name_span);
        let at = |n: usize| n as i64;
        [
            at(span.start()),
            at(span.end()) - at(span.start()),
            at(name.start()) - at(span.start()),
            at(name.end()) - at(name.start()),
        ]
    }
}

impl serde::Serialize for PackedSite<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let c = self.0;
        let [start, len, name_from, name_len] = self.spans();
        let mut t = s.serialize_tuple(Self::FIELDS)?;
        t.serialize_element(&c.recv)?;
        t.serialize_element(&c.args)?;
        t.serialize_element(&c.order)?;
        t.serialize_element(&c.depth)?;
        t.serialize_element(&start)?;
        t.serialize_element(&len)?;
        t.serialize_element(&name_from)?;
        t.serialize_element(&name_len)?;
        t.serialize_element(&c.result_key)?;
        t.end()
    }
}

/// Decodes one [`PackedSite`] into the [`CallSite`] of `callee` in
/// `scope`. With a [`Reach`], a call it says cannot resolve from its
/// file is built without its receiver and arguments, which are stepped
/// over in the bytes: the [`Reach::slim`] of the decoded call, without
/// building what it drops.
struct SiteSeed<'r> {
    callee: std::sync::Arc<str>,
    scope: ScopeId,
    reach: Option<(&'r Reach, usize)>,
}

impl<'de> serde::de::DeserializeSeed<'de> for SiteSeed<'_> {
    type Value = CallSite;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<CallSite, D::Error> {
        d.deserialize_tuple(PackedSite::FIELDS, self)
    }
}

impl<'de> serde::de::Visitor<'de> for SiteSeed<'_> {
    type Value = CallSite;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a packed call site")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<CallSite, A::Error> {
        use serde::de::Error;
        let missing = |what: &str| A::Error::custom(format!("a call site without its {what}"));
        let recv: Option<Box<str>> = seq.next_element()?.ok_or_else(|| missing("receiver"))?;
        let resolves = self.reach.is_none_or(|(reach, file)| {
            reach.may_resolve_parts(file, &self.callee, recv.as_deref())
        });
        let (recv, args) = if resolves {
            let args: Vec<CallArg> = seq.next_element()?.ok_or_else(|| missing("arguments"))?;
            (recv, args)
        } else {
            seq.next_element::<serde::de::IgnoredAny>()?
                .ok_or_else(|| missing("arguments"))?;
            (None, Vec::new())
        };
        let order = seq.next_element()?.ok_or_else(|| missing("order"))?;
        let depth = seq.next_element()?.ok_or_else(|| missing("depth"))?;
        let mut spans = [0i64; 4];
        for n in &mut spans {
            *n = seq.next_element()?.ok_or_else(|| missing("spans"))?;
        }
        let [start, len, name_from, name_len] = spans;
        let offset = |n: i64| usize::try_from(n).map_err(|_| missing("spans"));
        let span = crate::facts::Span::new(offset(start)?, offset(start + len)?);
        let name_start = offset(start + name_from)?;
        let name_span = crate::facts::Span::new(name_start, offset(name_start as i64 + name_len)?);
        Ok(CallSite {
            callee: self.callee,
            recv: recv.map(Into::into),
            args,
            scope: self.scope,
            order,
            depth,
            span,
            name_span,
            result_key: seq.next_element()?.unwrap_or_default(),
        })
    }
}

/// Which kept calls the link could ever resolve: `link::resolve` reaches a
/// summary of another file only through a name that says Redis
/// (`link::says_redis`) or a receiver naming its owner, and one of the
/// caller's file otherwise; summaries exist only for named, non-test
/// scopes. A call that none of these can fit is still a call site for the
/// failure-path analysis (`failure`, which reads only its name, scope and
/// position), so it keeps those and drops its receiver and arguments —
/// most of a call's memory on a large project, where names like `get`
/// stay relevant through some wrapper.
pub struct Reach {
    /// Name → the files with a named, non-test scope of that name (in
    /// order, once each) and the distinct owners of those scopes as
    /// `link::resolve` compares them (`None`: too many to compare).
    by_name: HashMap<String, (Vec<usize>, Option<Vec<String>>)>,
}

/// Most distinct owners of one name compared per call; a name with more
/// keeps every call's receiver and arguments.
const MAX_OWNERS: usize = 32;

impl Reach {
    /// From every file of the project, in the link's order.
    pub fn of<'a>(files: impl Iterator<Item = &'a FileFacts>) -> Reach {
        let mut by_name: HashMap<String, (Vec<usize>, Option<Vec<String>>)> = HashMap::default();
        for (fi, f) in files.enumerate() {
            for s in f.scopes.iter().filter(|s| !s.is_test && !s.name.is_empty()) {
                let (in_files, owners) = by_name
                    .entry(s.name.clone())
                    .or_insert_with(|| (Vec::new(), Some(Vec::new())));
                if in_files.last() != Some(&fi) {
                    in_files.push(fi);
                }
                if let (Some(owner), Some(list)) = (s.owner.as_deref(), owners.as_mut()) {
                    let owner = super::link::owner_word(owner);
                    if !list.contains(&owner) {
                        list.push(owner);
                    }
                    if list.len() > MAX_OWNERS {
                        *owners = None;
                    }
                }
            }
        }
        Reach { by_name }
    }

    /// Whether `link::resolve` could resolve the call `c` of file `file` to
    /// some function of the project (a necessary condition only).
    fn may_resolve(&self, file: usize, c: &CallSite) -> bool {
        self.may_resolve_parts(file, &c.callee, c.recv.as_deref())
    }

    /// [`Reach::may_resolve`] of a call by its callee and receiver.
    fn may_resolve_parts(&self, file: usize, callee: &str, recv: Option<&str>) -> bool {
        let Some((in_files, owners)) = self.by_name.get(callee) else {
            return false;
        };
        if in_files.binary_search(&file).is_ok() || super::link::says_redis(callee) {
            return true;
        }
        // the receiver as `link::resolve` compares it with an owner
        let Some(r) = recv.map(super::link::receiver_word) else {
            return false;
        };
        r.len() >= 3
            && owners
                .as_ref()
                .is_none_or(|list| list.iter().any(|o| super::link::names_owner_word(&r, o)))
    }

    /// Drops the receiver and arguments of the calls of file `file` that
    /// cannot resolve (see [`Reach`]).
    pub fn slim(&self, file: usize, calls: &mut [CallSite]) {
        for c in calls.iter_mut() {
            if !self.may_resolve(file, c) {
                c.recv = None;
                c.args = Vec::new();
            }
        }
    }
}

/// The names whose calls can matter to the link (see the module doc), from
/// each file's facts and its calls' names; `None` when the closure does not
/// settle within [`MAX_ROUNDS`] (then every call is kept).
pub fn relevant(files: &[(&FileFacts, &CallNames)]) -> Option<HashSet<String>> {
    use rayon::prelude::*;
    let name = |f: &FileFacts, s: ScopeId| -> Option<String> {
        f.scopes
            .get(s as usize)
            .map(|x| x.name.as_str())
            .filter(|n| !n.is_empty())
            .map(String::from)
    };
    let mut out: HashSet<String> = HashSet::default();
    for (f, _) in files {
        out.extend(f.ops.iter().filter_map(|o| name(f, o.scope)));
    }
    for _ in 0..MAX_ROUNDS {
        // each round reads every call: the files side by side (a set: the
        // order they come in does not matter)
        let more: Vec<&str> = files
            .par_iter()
            .flat_map_iter(|&(f, calls)| {
                let out = &out;
                calls.iter().filter_map(move |(callee, scope)| {
                    let caller = f
                        .scopes
                        .get(scope as usize)
                        .map(|x| x.name.as_str())
                        .filter(|n| !n.is_empty())?;
                    (out.contains(callee) && !out.contains(caller)).then_some(caller)
                })
            })
            .collect();
        if more.is_empty() {
            return Some(out);
        }
        out.extend(more.into_iter().map(String::from));
    }
    None
}

/// [`relevant`] by name hashes (`cache::name_hash`), over the files read
/// (their facts, and their calls' names when packed) and the
/// `cache::Uses` of files whose facts stay encoded (none of which has ops
/// of its own). A hash collision only adds names: a file left out by it
/// (none of its callees in the set) calls no name of [`relevant`]'s
/// closure, which holds every name a summary, a linked op or the
/// failure-path analysis can follow.
pub fn relevant_hashes<'a>(
    read: impl Iterator<Item = (&'a FileFacts, Option<&'a CallNames>)>,
    lazy: &[super::cache::Uses],
) -> HashSet<u64> {
    use super::cache::name_hash;
    let mut out: HashSet<u64> = HashSet::default();
    // (callee, caller) pairs with a named caller, the only ones that widen
    // the closure
    let mut pairs: Vec<(u64, u64)> = Vec::new();
    for (f, names) in read {
        let name = |s: ScopeId| {
            f.scopes
                .get(s as usize)
                .filter(|x| !x.name.is_empty())
                .map_or(0, |x| name_hash(&x.name))
        };
        out.extend(f.ops.iter().map(|o| name(o.scope)).filter(|&h| h != 0));
        match names {
            Some(n) => pairs.extend(n.iter().map(|(c, s)| (name_hash(c), name(s)))),
            None => pairs.extend(
                f.link
                    .calls
                    .iter()
                    .map(|c| (name_hash(&c.callee), name(c.scope))),
            ),
        }
    }
    pairs.retain(|&(_, caller)| caller != 0);
    pairs.extend(
        lazy.iter()
            .flat_map(|u| u.pairs())
            .filter(|&(_, caller)| caller != 0),
    );
    pairs.sort_unstable();
    pairs.dedup();
    loop {
        let before = out.len();
        for &(callee, caller) in &pairs {
            if out.contains(&callee) {
                out.insert(caller);
            }
        }
        if out.len() == before {
            return out;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::{KeyExpr, Language, Op, OpKind, Scope, Span};

    fn call(callee: &str, scope: ScopeId) -> CallSite {
        CallSite {
            callee: callee.into(),
            recv: None,
            args: Vec::new(),
            scope,
            order: 0,
            depth: 0,
            span: Span::default(),
            name_span: Span::default(),
            result_key: None,
        }
    }

    /// Sites packed one by one are the bytes and names of the same sites
    /// packed at once, across chunk boundaries and array-head sizes.
    #[test]
    fn sites_packed_one_by_one_are_packed_at_once() {
        for n in [1usize, 15, 16, 3000, 70_000] {
            let sites: Vec<CallSite> = (0..n)
                .map(|i| {
                    let mut c = call(["lock", "get", "release"][i % 3], (i % 7) as ScopeId);
                    c.args.push(CallArg {
                        key: std::sync::Arc::new(KeyExpr::lit(&format!("k{i}"))),
                        value: crate::facts::ValueExpr::Unknown,
                        name: None,
                        keyword: None,
                        ty: None,
                    });
                    c
                })
                .collect();
            let mut packer = SitePacker::default();
            for c in &sites {
                packer.push(c);
            }
            assert_eq!(packer.len(), n);
            let one = packer.finish().expect("packed");
            let all = PackedCalls::of(&sites).expect("packed");
            assert_eq!(&*one.bytes, &*all.bytes, "{n} sites");
            assert_eq!(
                one.names.iter().collect::<Vec<_>>(),
                all.names.iter().collect::<Vec<_>>()
            );
            let mut functions = Vec::new();
            assert_eq!(one.unpack(None, &mut functions), sites);
        }
        assert!(SitePacker::default().finish().is_none());
    }

    /// Sites packed with their order written later decode as the same
    /// sites packed with it (receivers, arguments, keys, result keys, spans
    /// of every shape; across chunk boundaries), with the name list of
    /// sites packed at once; only the orders' bytes differ (always 5).
    #[test]
    fn sites_packed_before_their_order_decode_as_packed_with_it() {
        for n in [1usize, 3000] {
            let sites: Vec<CallSite> = (0..n)
                .map(|i| {
                    let mut c = call(["lock", "get", "release"][i % 3], (i % 7) as ScopeId);
                    c.recv = (i % 2 == 0).then(|| format!("self.r{i}").into());
                    c.args.push(CallArg {
                        key: std::sync::Arc::new(KeyExpr::lit(&format!("k{i}"))),
                        value: crate::facts::ValueExpr::Constant("1".into()),
                        name: Some("key".into()),
                        keyword: None,
                        ty: Some("string".into()),
                    });
                    c.order = [0, 7, 300, 70_000, u32::MAX][i % 5];
                    c.depth = (i % 4) as u32;
                    // spans at any offset (past 4 GiB too), the name at
                    // the span's start, inside it or before it, empty ones
                    let at = i * [10, 100_003, 1_500_007][i % 3];
                    (c.span, c.name_span) = match i % 4 {
                        0 => (Span::new(at, at + 9), Span::new(at, at + 4)),
                        1 => (
                            Span::new(at, at + 90_000),
                            Span::new(at + 70_000, at + 70_004),
                        ),
                        2 => (Span::new(at + 5, at + 9), Span::new(at, at + 3)),
                        _ => (Span::new(at, at), Span::new(at, at)),
                    };
                    c.result_key = (i % 3 == 0).then(|| Box::new(KeyExpr::var("k")));
                    c
                })
                .collect();
            let mut packer = SitePacker::default();
            let mut at = Vec::new();
            for c in &sites {
                let mut blank = c.clone();
                blank.order = 12345;
                at.push(packer.push_order_later(&blank).expect("packed"));
            }
            for (a, c) in at.into_iter().zip(&sites) {
                packer.set_order(a, c.order);
            }
            let late = packer.finish().expect("packed");
            let all = PackedCalls::of(&sites).expect("packed");
            assert_eq!(
                late.names.iter().collect::<Vec<_>>(),
                all.names.iter().collect::<Vec<_>>()
            );
            assert_eq!(late.unpack(None, &mut Vec::new()), sites, "{n} sites");
        }
    }

    fn scope(f: &mut FileFacts, name: &str) -> ScopeId {
        f.add_scope(Scope {
            name: name.into(),
            owner: None,
            is_test: false,
        })
    }

    fn acquire(scope: ScopeId, key: &str) -> Op {
        Op::new(
            OpKind::Acquire { expiry: true },
            KeyExpr::lit(key),
            None,
            scope,
            Span::default(),
            Span::default(),
            Default::default(),
        )
    }

    #[test]
    fn only_calls_of_functions_reaching_an_op_are_unpacked() {
        // tryLock has an op; withLock calls tryLock; run calls withLock and
        // println; main calls run, which reaches the op three calls deep
        let mut a = FileFacts::new(Language::Java);
        let try_lock = scope(&mut a, "tryLock");
        a.ops.push(acquire(try_lock, "lock:a"));
        let mut b = FileFacts::new(Language::Java);
        let with_lock = scope(&mut b, "withLock");
        let run = scope(&mut b, "run");
        let main = scope(&mut b, "main");
        b.link.calls = vec![
            call("println", run),
            call("run", main),
            call("tryLock", with_lock),
            call("withLock", run),
            call("format", main),
        ];
        let packed = PackedCalls::take(&mut b).expect("calls");
        assert!(b.link.calls.is_empty());
        let empty = CallNames::default();
        let files = [(&a, &empty), (&b, &packed.names)];
        let keep = relevant(&files).expect("settles");
        let mut names: Vec<&str> = keep.iter().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["main", "run", "tryLock", "withLock"]);
        let calls: Vec<String> = packed
            .unpack(Some(&keep), &mut b.link.functions)
            .into_iter()
            .map(|c| c.callee.to_string())
            .collect();
        assert_eq!(calls, ["run", "tryLock", "withLock"]);
    }

    #[test]
    fn unpacked_calls_share_their_names_texts_and_keys() {
        let mut f = FileFacts::new(Language::Java);
        let run = scope(&mut f, "run");
        let arg = |key: &str, name: &str| crate::facts::CallArg {
            key: KeyExpr::var(key).into(),
            value: crate::facts::ValueExpr::Unknown,
            name: Some(name.into()),
            keyword: None,
            ty: Some("String".into()),
        };
        let mut calls = Vec::new();
        for (callee, key) in [("lockIt", "key"), ("lockIt", "key"), ("unlock", "other")] {
            let mut c = call(callee, run);
            c.recv = Some("locks".into());
            c.args = vec![arg(key, key)];
            calls.push(c);
        }
        for keep in [
            None,
            Some(["lockIt", "unlock"].map(String::from).into_iter().collect()),
        ] {
            f.link.calls = calls.clone();
            let packed = PackedCalls::take(&mut f).expect("calls");
            let got = packed.unpack(keep.as_ref(), &mut f.link.functions);
            assert_eq!(got, calls, "decoded as encoded");
            let same =
                |a: &std::sync::Arc<str>, b: &std::sync::Arc<str>| std::sync::Arc::ptr_eq(a, b);
            assert!(same(&got[0].callee, &got[1].callee));
            assert!(same(
                got[0].recv.as_ref().unwrap(),
                got[2].recv.as_ref().unwrap()
            ));
            let (a, b, c) = (&got[0].args[0], &got[1].args[0], &got[2].args[0]);
            assert!(std::sync::Arc::ptr_eq(&a.key, &b.key));
            assert!(!std::sync::Arc::ptr_eq(&a.key, &c.key));
            assert!(same(a.name.as_ref().unwrap(), b.name.as_ref().unwrap()));
            assert!(same(a.ty.as_ref().unwrap(), c.ty.as_ref().unwrap()));
        }
    }

    #[test]
    fn a_call_no_function_can_take_keeps_only_its_name_and_place() {
        let mut a = FileFacts::new(Language::Java);
        let get = a.add_scope(Scope {
            name: "get".into(),
            owner: Some("Lock_Store".into()),
            is_test: false,
        });
        let mut b = FileFacts::new(Language::Java);
        let run = scope(&mut b, "run");
        let with_arg = |callee: &str, recv: Option<&str>| {
            let mut c = call(callee, run);
            c.recv = recv.map(Into::into);
            c.args = vec![crate::facts::CallArg {
                key: KeyExpr::lit("k").into(),
                value: crate::facts::ValueExpr::Unknown,
                name: None,
                keyword: None,
                ty: None,
            }];
            c
        };
        let reach = Reach::of([&a, &b].into_iter());
        let mut calls = vec![
            with_arg("get", Some("map")),
            with_arg("get", Some("this.lockStore")),
            with_arg("get", None),
            with_arg("run", Some("map")),
            with_arg("tryLock", None),
        ];
        // decoding the packed calls with the reach builds what slimming
        // the decoded ones leaves (a result key kept either way)
        calls[2].result_key = Some(Box::new(KeyExpr::lit("lock:r")));
        b.link.calls = calls.clone();
        let packed = PackedCalls::take(&mut b).expect("calls");
        let keep: HashSet<String> = ["get", "run", "tryLock"]
            .map(String::from)
            .into_iter()
            .collect();
        let every = PackedCalls::of(&calls).expect("calls");
        let reaching =
            packed.unpack_reaching(Some(&keep), Some((&reach, 1)), &mut b.link.functions);
        reach.slim(1, &mut calls);
        assert_eq!(reaching, calls);
        // every call kept (no name list): the same
        let all_reaching = every.unpack_reaching(None, Some((&reach, 1)), &mut Vec::new());
        assert_eq!(all_reaching, calls);
        let kept: Vec<(bool, bool)> = calls
            .iter()
            .map(|c| (c.recv.is_some(), !c.args.is_empty()))
            .collect();
        // `map.get` and a bare `get` cannot reach `LockStore.get` in another
        // file; `run` is this file's; `tryLock` has no function at all
        assert_eq!(
            kept,
            [
                (false, false),
                (true, true),
                (false, false),
                (true, true),
                (false, false)
            ]
        );
        assert!(calls.iter().all(|c| c.scope == run));
        let _ = get;
    }

    #[test]
    fn a_file_without_a_relevant_call_is_not_decoded() {
        let mut f = FileFacts::new(Language::Python);
        let s = scope(&mut f, "handler");
        f.link.calls = vec![call("print", s)];
        let packed = PackedCalls::take(&mut f).expect("calls");
        assert!(packed
            .unpack(Some(&HashSet::default()), &mut f.link.functions)
            .is_empty());
        let mut f = FileFacts::new(Language::Python);
        f.link.calls = vec![call("print", s)];
        let all = PackedCalls::take(&mut f)
            .expect("calls")
            .unpack(None, &mut f.link.functions);
        assert_eq!(all.len(), 1);
    }

    fn sig(scope: ScopeId, params: &[&str]) -> FnSig {
        FnSig::new(
            scope,
            params.iter().map(|p| (*p).into()).collect(),
            0,
            Box::default(),
        )
    }

    #[test]
    fn signatures_without_an_op_wait_packed_and_come_back_in_place() {
        let mut f = FileFacts::new(Language::Python);
        let a = scope(&mut f, "audit");
        let l = scope(&mut f, "acquire");
        let r = scope(&mut f, "run");
        let n = scope(&mut f, "noop");
        f.ops.push(acquire(l, "k"));
        f.link.functions = vec![sig(a, &["e"]), sig(l, &["k"]), sig(r, &[]), sig(n, &["x"])];
        f.link.calls = vec![call("acquire", r)];
        let whole = format!("{:?}", f.link.functions);
        let mut packed = PackedCalls::take(&mut f).expect("calls");
        packed.take_idle_functions(&mut f);
        // only the function with an op stays; the scan still sees the others
        assert_eq!(f.link.functions.len(), 1);
        assert_eq!(f.link.functions[0].scope, l);
        assert_eq!(
            packed.names.packed_functions(),
            [(a, true), (r, false), (n, true)]
        );
        // a second call changes nothing
        packed.take_idle_functions(&mut f);
        assert_eq!(f.link.functions.len(), 1);
        // unpacked (even with no call kept), every signature is back in order
        let calls = packed.unpack(Some(&HashSet::default()), &mut f.link.functions);
        assert!(calls.is_empty());
        assert_eq!(format!("{:?}", f.link.functions), whole);
    }
}
