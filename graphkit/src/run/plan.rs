//! Planning: which tasks the next super-step runs, from edges, routers, commands and sends.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use crate::command::{Goto, Packet};
use crate::error::Error;
use crate::graph::END;
use crate::graph::compiled::{Branch, Dest, GraphCore, NodeId};
use crate::state::State;

/// One task of a super-step: a node, and its own input if a `Send` created it.
#[derive(Clone)]
pub(crate) struct Task {
    pub(crate) node: NodeId,
    pub(crate) input: Option<Packet>,
}

/// What planning carries from one step to the next besides the state: which sources of
/// each join have finished since it last fired, and the tasks of deferred nodes held back
/// until nothing else is left to run (a deferred node joins on the whole run).
pub(crate) struct JoinProgress {
    /// Per join edge, per source: finished since the join last fired.
    pub(crate) seen: Vec<Vec<bool>>,
    /// The held tasks of deferred nodes, in the order they were first triggered: one per
    /// node for edges, joins, routers and `Command`s, one per `Send`.
    pub(crate) deferred: Vec<Task>,
}

impl JoinProgress {
    pub(crate) fn new<S: State>(core: &GraphCore<S>) -> Self {
        Self {
            seen: core.joins.iter().map(|j| vec![false; j.sources]).collect(),
            deferred: Vec::new(),
        }
    }

    /// Progress as stored in a checkpoint; join progress is reset if the graph's joins
    /// changed since. Held tasks stay held whatever changed: they run at the end.
    pub(crate) fn restore<S: State>(
        core: &GraphCore<S>,
        stored: Vec<Vec<bool>>,
        deferred: Vec<Task>,
    ) -> Self {
        let fits = stored.len() == core.joins.len()
            && stored
                .iter()
                .zip(&core.joins)
                .all(|(s, j)| s.len() == j.sources);
        let seen = if fits { stored } else { Self::new(core).seen };
        Self { seen, deferred }
    }
}

/// Collects triggers for the next step and orders them: edge-triggered nodes by name
/// (byte order), then sends in the order they were made.
struct Planner<'a, S: State> {
    core: &'a GraphCore<S>,
    /// One flag per node, all false between steps; reused so a step costs what it
    /// triggers, not the size of the graph.
    flags: &'a mut [bool],
    /// The nodes triggered so far (the scratch's list, reused from step to step).
    triggered: &'a mut Vec<NodeId>,
    sends: Vec<Task>,
    /// The last node looked up by name: a router's sends mostly go to one node, and
    /// comparing the name is cheaper than hashing it again.
    lookup: Option<NodeId>,
}

/// The per-run scratch space of the planner: the node flags, and the list of triggered
/// nodes (kept to reuse its allocation).
pub(crate) struct PlanScratch(Vec<bool>, Vec<NodeId>);

impl PlanScratch {
    pub(crate) fn new<S: State>(core: &GraphCore<S>) -> Self {
        Self(vec![false; core.nodes.len()], Vec::new())
    }
}

impl<'a, S: State> Planner<'a, S> {
    fn new(core: &'a GraphCore<S>, scratch: &'a mut PlanScratch) -> Self {
        scratch.1.clear();
        Self {
            core,
            flags: &mut scratch.0,
            triggered: &mut scratch.1,
            sends: Vec::new(),
            lookup: None,
        }
    }

    fn trigger(&mut self, dest: Dest) {
        if let Dest::Node(id) = dest
            && !std::mem::replace(&mut self.flags[id], true)
        {
            self.triggered.push(id);
        }
    }

    fn goto(&mut self, from: &str, goto: Goto, declared: Option<&[Arc<str>]>) -> Result<(), Error> {
        let target: &str = match &goto {
            Goto::Node(name) => name,
            Goto::Send(send) => &send.node,
        };
        if let Some(declared) = declared.filter(|d| !d.iter().any(|d| &**d == target)) {
            return Err(Error::UndeclaredTarget {
                from: from.to_owned(),
                target: target.to_owned(),
                declared: declared.iter().map(|d| d.to_string()).collect(),
            });
        }
        match goto {
            Goto::Node(name) if &*name == END => {}
            Goto::Node(name) => {
                let id = self.lookup(from, &name)?;
                self.trigger(Dest::Node(id));
            }
            Goto::Send(send) => {
                let id = self.lookup(from, &send.node)?;
                self.sends.push(Task {
                    node: id,
                    input: Some(send.input),
                });
            }
        }
        Ok(())
    }

    fn lookup(&mut self, from: &str, name: &str) -> Result<NodeId, Error> {
        if let Some(id) = self.lookup
            && *self.core.nodes[id].name == *name
        {
            return Ok(id);
        }
        let id = self
            .core
            .by_name
            .get(name)
            .copied()
            .ok_or_else(|| Error::UnknownTarget {
                from: from.to_owned(),
                target: name.to_owned(),
            })?;
        self.lookup = Some(id);
        Ok(id)
    }

    fn route(&mut self, from: &str, branch: &Branch<S>, state: &S) -> Result<(), Error> {
        let routed = catch_unwind(AssertUnwindSafe(|| (branch.router)(state)));
        let gotos = match routed {
            Ok(Ok(gotos)) => gotos,
            Ok(Err(err)) => {
                return Err(Error::RouterFailed {
                    node: from.to_owned(),
                    message: err.to_string(),
                });
            }
            Err(panic) => {
                return Err(Error::RouterFailed {
                    node: from.to_owned(),
                    message: format!("panicked: {}", panic_message(&*panic)),
                });
            }
        };
        self.sends.reserve(gotos.len());
        for goto in gotos {
            let goto = match (&branch.path_map, goto) {
                (Some(path_map), Goto::Node(label)) => {
                    let target = path_map
                        .iter()
                        .find(|(l, _)| *l == label)
                        .map(|(_, target)| Arc::clone(target))
                        .ok_or_else(|| Error::UnknownRouteLabel {
                            from: from.to_owned(),
                            label: label.to_string(),
                            labels: path_map.iter().map(|(l, _)| l.to_string()).collect(),
                        })?;
                    Goto::Node(target)
                }
                (_, goto) => goto,
            };
            self.goto(from, goto, branch.declared.as_deref())?;
        }
        Ok(())
    }

    fn finish(self, held: &mut Vec<Task>, others: bool) -> Vec<Task> {
        let mut tasks = Vec::new();
        self.finish_into(&mut tasks, held, others);
        tasks
    }

    /// Appends the planned tasks to `tasks`. Tasks of deferred nodes go to `held` instead,
    /// and everything held is released into the plan when nothing else is planned (and
    /// `others`, tasks planned elsewhere for the same step, is false).
    fn finish_into(mut self, tasks: &mut Vec<Task>, held: &mut Vec<Task>, others: bool) {
        if self.core.has_deferred {
            self.hold_deferred(held, others || !tasks.is_empty());
        }
        // The common step of a chain: one node triggered, nothing sent.
        if let ([id], true) = (&self.triggered[..], self.sends.is_empty()) {
            self.flags[*id] = false;
            tasks.push(Task {
                node: *id,
                input: None,
            });
            self.triggered.clear();
            return;
        }
        for &id in self.triggered.iter() {
            self.flags[id] = false;
        }
        let core = self.core;
        if self.triggered.len() > 1 {
            self.triggered
                .sort_unstable_by_key(|&id| core.nodes[id].rank);
        }
        if !self.sends.is_empty() && self.triggered.is_empty() && tasks.is_empty() {
            // Only sends: their buffer becomes the step's.
            std::mem::swap(tasks, &mut self.sends);
            return;
        }
        tasks.reserve(self.triggered.len() + self.sends.len());
        tasks.extend(
            self.triggered
                .drain(..)
                .map(|node| Task { node, input: None }),
        );
        if !self.sends.is_empty() {
            tasks.append(&mut self.sends);
        }
    }

    /// Moves the tasks of deferred nodes from the plan to `held` (a node triggered again
    /// while held is not held twice); if then nothing else is planned and not `others`,
    /// moves everything held back into the plan: the run's other branches are done.
    fn hold_deferred(&mut self, held: &mut Vec<Task>, others: bool) {
        let core = self.core;
        let nodes = &core.nodes;
        let flags = &mut *self.flags;
        self.triggered.retain(|&id| {
            if !nodes[id].defer {
                return true;
            }
            flags[id] = false;
            if !held.iter().any(|t| t.input.is_none() && t.node == id) {
                held.push(Task {
                    node: id,
                    input: None,
                });
            }
            false
        });
        if self.sends.iter().any(|t| nodes[t.node].defer) {
            let (deferred, sends): (Vec<Task>, Vec<Task>) = std::mem::take(&mut self.sends)
                .into_iter()
                .partition(|t| nodes[t.node].defer);
            held.extend(deferred);
            self.sends = sends;
        }
        if others || !self.triggered.is_empty() || !self.sends.is_empty() {
            return;
        }
        for task in held.drain(..) {
            match task.input {
                None => self.trigger(Dest::Node(task.node)),
                Some(_) => self.sends.push(task),
            }
        }
    }
}

impl<S: State> Drop for Planner<'_, S> {
    fn drop(&mut self) {
        // Planning stopped on an error: leave the scratch clean anyway.
        for &id in self.triggered.iter() {
            self.flags[id] = false;
        }
        self.triggered.clear();
    }
}

/// The first step's tasks: edges and routers out of START, on the state after the input.
/// Deferred nodes among them are held in `joins` if anything else starts.
pub(crate) fn start_tasks<S: State>(
    core: &GraphCore<S>,
    state: &S,
    joins: &mut JoinProgress,
    scratch: &mut PlanScratch,
) -> Result<Vec<Task>, Error> {
    let mut planner = Planner::new(core, scratch);
    for &dest in &core.start_edges {
        planner.trigger(dest);
    }
    for branch in &core.start_branches {
        planner.route(crate::graph::START, branch, state)?;
    }
    Ok(planner.finish(&mut joins.deferred, false))
}

/// The tasks a run's input routes to (`Command::goto` given as run input). `others` says
/// whether the step they join has tasks already (deferred nodes wait for those).
pub(crate) fn goto_tasks<S: State>(
    core: &GraphCore<S>,
    gotos: Vec<Goto>,
    joins: &mut JoinProgress,
    scratch: &mut PlanScratch,
    others: bool,
) -> Result<Vec<Task>, Error> {
    let mut planner = Planner::new(core, scratch);
    for goto in gotos {
        planner.goto("the run's input", goto, None)?;
    }
    Ok(planner.finish(&mut joins.deferred, others))
}

/// The next step's tasks, after the tasks `done` ran (in apply order) and their writes were
/// applied to `state`. `gotos` holds the `Command` targets of the tasks that routed, as
/// (index in `done`, targets), in task order. Tasks of deferred
/// nodes are held in `joins` while anything else runs, and are the next step's tasks when
/// nothing else does.
pub(crate) fn next_tasks<S: State>(
    core: &GraphCore<S>,
    done: &[Task],
    mut gotos: Vec<(usize, Vec<Goto>)>,
    state: &S,
    joins: &mut JoinProgress,
    scratch: &mut PlanScratch,
) -> Result<Vec<Task>, Error> {
    let mut tasks = Vec::new();
    next_tasks_into(core, done, &mut gotos, state, joins, scratch, &mut tasks)?;
    Ok(tasks)
}

/// [`next_tasks`], appending the tasks to `tasks` and draining `gotos` (the run's step
/// loop reuses both buffers).
pub(crate) fn next_tasks_into<S: State>(
    core: &GraphCore<S>,
    done: &[Task],
    gotos: &mut Vec<(usize, Vec<Goto>)>,
    state: &S,
    joins: &mut JoinProgress,
    scratch: &mut PlanScratch,
    tasks: &mut Vec<Task>,
) -> Result<(), Error> {
    let mut planner = Planner::new(core, scratch);
    // (Most steps route nothing: no drain to make and drop then.)
    let mut routed = (!gotos.is_empty()).then(|| gotos.drain(..).peekable());
    for (index, task) in done.iter().enumerate() {
        let node = &core.nodes[task.node];
        for &dest in &node.edges {
            planner.trigger(dest);
        }
        for &(join, position) in &node.joins {
            let seen = &mut joins.seen[join];
            seen[position] = true;
            if seen.iter().all(|s| *s) {
                seen.iter_mut().for_each(|s| *s = false);
                planner.trigger(core.joins[join].target);
            }
        }
        while let Some((_, gotos)) = routed
            .as_mut()
            .and_then(|r| r.next_if(|(i, _)| *i == index))
        {
            for goto in gotos {
                planner.goto(&node.name, goto, node.destinations.as_deref())?;
            }
        }
        for branch in &node.branches {
            planner.route(&node.name, branch, state)?;
        }
    }
    planner.finish_into(tasks, &mut joins.deferred, false);
    Ok(())
}

pub(crate) fn panic_message(panic: &(dyn std::any::Any + std::marker::Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_owned()
    }
}
