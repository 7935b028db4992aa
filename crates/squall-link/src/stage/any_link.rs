//! Every link kind behind one enum, for static dispatch: the stage holds an
//! `AnyLink` and calls it through the [`Link`] trait.
//!
//! The kinds are listed once, where their modules are declared
//! (`stage/mod.rs`), by [`links!`], which declares `AnyLink`, its timers
//! `AnyTimer`, how a stage's configuration chooses one
//! ([`LinkKind::choose`], tried in the list's order, the default kind
//! last) and the dispatch of every [`Link`] method. Nothing here names a
//! kind: a new link kind is its file (`impl Link`, `impl LinkKind`), its
//! `mod` and one line of the list, and the key that chooses it in
//! `config.rs`.

use super::Recorder;
use super::link::Link;
use crate::config::StageConfig;
use crate::rng::StreamRng;
use crate::time::Instant;

/// A link kind that a stage's configuration can choose.
pub(crate) trait LinkKind: Link + Sized {
    /// The link of this kind that `config` describes, or `None` if
    /// `config` chooses another kind (the default kind takes every
    /// configuration). `config` has passed [`StageConfig::validate`];
    /// `rng(component)` gives the stage's random stream of that name.
    fn choose(
        config: &StageConfig,
        recorder: &Recorder,
        seed: u64,
        rng: &mut dyn FnMut(&str) -> StreamRng,
    ) -> Option<Self>;
}

/// A kind other than the default one asks for its next timer out of line
/// unless the list marks it `#[inline]`: the trace link's, inlined into
/// `AnyLink::next_timer`, made the compiler stop inlining that dispatch
/// into the stage's loop (+23 M instructions, 5 %, on `squall bench tcp
/// --runs 1` under callgrind, which has no trace link). The radio's is
/// small and asked on every pass of a radio path: out of line it cost the
/// radio benchmarks 3–5 %, so the list marks it `#[inline]`.
#[inline(never)]
pub(crate) fn next_timer_out_of_line<L: Link>(l: &L) -> Option<(Instant, L::Timer)> {
    l.next_timer()
}

/// [`next_timer_out_of_line`]'s twin for [`Link::next_wakeup`].
#[inline(never)]
pub(crate) fn next_wakeup_out_of_line<L: Link>(l: &L) -> Option<Instant> {
    l.next_wakeup()
}

/// Declares `AnyLink` (one variant per kind: the default kind inline, as it
/// is on every packet's path, the others boxed), `AnyTimer`,
/// `AnyLink::new` and `impl Link for AnyLink`, from the list of kinds:
/// `default Variant(Type), [#[inline]] Variant(Type), ...`, each type
/// implementing [`Link`] and [`LinkKind`]; `#[inline]` has the dispatch call
/// that kind's `next_timer` and `next_wakeup` in line (see
/// [`next_timer_out_of_line`]).
macro_rules! links {
    (default $dv:ident($dt:ty) $(, $(#[$inl:ident])? $v:ident($t:ty))* $(,)?) => {
        /// Every link, for static dispatch. One per stage.
        #[derive(Debug)]
        #[allow(clippy::large_enum_variant)]
        pub(crate) enum AnyLink {
            $dv($dt),
            $($v(Box<$t>),)*
        }

        /// A timer of one of the links.
        #[derive(Clone, Copy, Debug)]
        pub(crate) enum AnyTimer {
            $dv(<$dt as $crate::stage::link::Link>::Timer),
            $($v(<$t as $crate::stage::link::Link>::Timer),)*
        }

        impl AnyLink {
            /// The link `config` chooses: the first kind of the list that
            /// takes it, else the default one. `rng(component)` gives the
            /// stage's random stream of that name.
            pub(crate) fn new(
                config: &$crate::config::StageConfig,
                recorder: $crate::stage::Recorder,
                seed: u64,
                mut rng: impl FnMut(&str) -> $crate::rng::StreamRng,
            ) -> Self {
                use $crate::stage::any_link::LinkKind;
                $(
                    if let Some(l) = <$t as LinkKind>::choose(config, &recorder, seed, &mut rng) {
                        return AnyLink::$v(Box::new(l));
                    }
                )*
                let default = <$dt as LinkKind>::choose(config, &recorder, seed, &mut rng);
                AnyLink::$dv(default.expect("the default link kind takes every stage"))
            }
        }

        impl $crate::stage::link::Link for AnyLink {
            type Timer = AnyTimer;
            #[inline]
            fn next_timer(&self) -> Option<($crate::time::Instant, AnyTimer)> {
                match self {
                    AnyLink::$dv(l) => $crate::stage::link::Link::next_timer(l).map(|(t, d)| (t, AnyTimer::$dv(d))),
                    $(AnyLink::$v(l) => $crate::stage::any_link::links!(@call [$($inl)?] next_timer, &**l).map(|(t, d)| (t, AnyTimer::$v(d))),)*
                }
            }
            /// Dispatched directly, not through [`Link::next_timer`]: the
            /// stage asks for its next wake-up on every pass of the path,
            /// and building an `AnyTimer` only to drop it cost the inlining
            /// of `Stage::next_wakeup`.
            #[inline]
            fn next_wakeup(&self) -> Option<$crate::time::Instant> {
                match self {
                    AnyLink::$dv(l) => $crate::stage::link::Link::next_wakeup(l),
                    $(AnyLink::$v(l) => $crate::stage::any_link::links!(@call [$($inl)?] next_wakeup, &**l),)*
                }
            }
            /// A timer of another link kind than this one cannot come from
            /// [`Link::next_timer`] (a stage's link never changes kind); it
            /// is a bug, caught in debug builds.
            fn fire(
                &mut self,
                now: $crate::time::Instant,
                timer: AnyTimer,
                queue_empty: bool,
                log: &mut Vec<$crate::event::Event>,
                out: &mut Vec<($crate::time::Instant, $crate::packet::Packet)>,
            ) {
                match (self, timer) {
                    (AnyLink::$dv(l), AnyTimer::$dv(d)) => $crate::stage::link::Link::fire(l, now, d, queue_empty, log, out),
                    $((AnyLink::$v(l), AnyTimer::$v(d)) => $crate::stage::link::Link::fire(&mut **l, now, d, queue_empty, log, out),)*
                    #[allow(unreachable_patterns)]
                    (link, timer) => debug_assert!(false, "timer {timer:?} fired on a link of another kind: {link:?}"),
                }
            }
            fn accepts(&self, size: u32) -> bool {
                $crate::stage::any_link::links!(@ref self, l => $crate::stage::link::Link::accepts(l, size); $dv; $($v($t)),*)
            }
            fn push(&mut self, now: $crate::time::Instant, packet: $crate::packet::Packet, log: &mut Vec<$crate::event::Event>) {
                $crate::stage::any_link::links!(@mut self, l => $crate::stage::link::Link::push(l, now, packet, log); $dv; $($v($t)),*)
            }
            fn fed(&mut self, now: $crate::time::Instant, queue_empty: bool, log: &mut Vec<$crate::event::Event>) {
                $crate::stage::any_link::links!(@mut self, l => $crate::stage::link::Link::fed(l, now, queue_empty, log); $dv; $($v($t)),*)
            }
            fn wake(&mut self, now: $crate::time::Instant) {
                $crate::stage::any_link::links!(@mut self, l => $crate::stage::link::Link::wake(l, now); $dv; $($v($t)),*)
            }
            fn idle(&self) -> bool {
                $crate::stage::any_link::links!(@ref self, l => $crate::stage::link::Link::idle(l); $dv; $($v($t)),*)
            }
            fn typical_tx(&self) -> $crate::time::Duration {
                $crate::stage::any_link::links!(@ref self, l => $crate::stage::link::Link::typical_tx(l); $dv; $($v($t)),*)
            }
            fn occupancy(&self) -> u64 {
                $crate::stage::any_link::links!(@ref self, l => $crate::stage::link::Link::occupancy(l); $dv; $($v($t)),*)
            }
            fn stats(&self) -> $crate::stage::link::LinkStats {
                $crate::stage::any_link::links!(@ref self, l => $crate::stage::link::Link::stats(l); $dv; $($v($t)),*)
            }
            fn set_recorder(&mut self, recorder: &$crate::stage::Recorder) {
                $crate::stage::any_link::links!(@mut self, l => $crate::stage::link::Link::set_recorder(l, recorder); $dv; $($v($t)),*)
            }
            fn reconfigure(
                &mut self,
                now: $crate::time::Instant,
                config: &$crate::config::StageConfig,
                patch: &$crate::patch::StagePatch,
                log: &mut Vec<$crate::event::Event>,
                rng: &mut dyn FnMut(&str) -> $crate::rng::StreamRng,
            ) -> bool {
                $crate::stage::any_link::links!(@mut self, l => $crate::stage::link::Link::reconfigure(l, now, config, patch, log, rng); $dv; $($v($t)),*)
            }
            fn before_change(&mut self, at: $crate::time::Instant, change: &$crate::patch::Change) {
                $crate::stage::any_link::links!(@mut self, l => $crate::stage::link::Link::before_change(l, at, change); $dv; $($v($t)),*)
            }
            fn changed(&mut self) {
                $crate::stage::any_link::links!(@mut self, l => $crate::stage::link::Link::changed(l); $dv; $($v($t)),*)
            }
            fn set_blackout(&mut self, on: bool) {
                $crate::stage::any_link::links!(@mut self, l => $crate::stage::link::Link::set_blackout(l, on); $dv; $($v($t)),*)
            }
            fn drop_waiting(
                &mut self,
                now: $crate::time::Instant,
                queue_empty: bool,
                log: &mut Vec<$crate::event::Event>,
                out: &mut Vec<($crate::time::Instant, $crate::packet::Packet)>,
            ) {
                $crate::stage::any_link::links!(@mut self, l => $crate::stage::link::Link::drop_waiting(l, now, queue_empty, log, out); $dv; $($v($t)),*)
            }
            fn set_vacation(&mut self, on: bool) {
                $crate::stage::any_link::links!(@mut self, l => $crate::stage::link::Link::set_vacation(l, on); $dv; $($v($t)),*)
            }
            fn set_forwarding(&mut self, on: bool) {
                $crate::stage::any_link::links!(@mut self, l => $crate::stage::link::Link::set_forwarding(l, on); $dv; $($v($t)),*)
            }
            fn set_credit(&mut self, credit: Option<u32>) {
                $crate::stage::any_link::links!(@mut self, l => $crate::stage::link::Link::set_credit(l, credit); $dv; $($v($t)),*)
            }
            fn started(&self) -> u64 {
                $crate::stage::any_link::links!(@ref self, l => $crate::stage::link::Link::started(l); $dv; $($v($t)),*)
            }
        }
    };
    // `next_timer` or `next_wakeup` of a kind marked `#[inline]`: in line.
    (@call [inline] $m:ident, $l:expr) => {
        $crate::stage::link::Link::$m($l)
    };
    // Of any other kind: out of line.
    (@call [] next_timer, $l:expr) => {
        $crate::stage::any_link::next_timer_out_of_line($l)
    };
    (@call [] next_wakeup, $l:expr) => {
        $crate::stage::any_link::next_wakeup_out_of_line($l)
    };
    // One method's dispatch: `$e` with `$l` bound to the link, by reference.
    (@ref $self:ident, $l:ident => $e:expr; $dv:ident; $($v:ident($t:ty)),*) => {
        match $self {
            AnyLink::$dv($l) => $e,
            $(AnyLink::$v(b) => {
                let $l: &$t = b;
                $e
            })*
        }
    };
    // The same, by mutable reference.
    (@mut $self:ident, $l:ident => $e:expr; $dv:ident; $($v:ident($t:ty)),*) => {
        match $self {
            AnyLink::$dv($l) => $e,
            $(AnyLink::$v(b) => {
                let $l: &mut $t = b;
                $e
            })*
        }
    };
}
pub(crate) use links;
