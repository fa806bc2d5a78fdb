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

/// Join progress of a run: which sources of each join have finished since it last fired.
pub(crate) struct JoinProgress(pub(crate) Vec<Vec<bool>>);

impl JoinProgress {
    pub(crate) fn new<S: State>(core: &GraphCore<S>) -> Self {
        Self(core.joins.iter().map(|j| vec![false; j.sources]).collect())
    }

    /// Progress as stored in a checkpoint; reset if the graph's joins changed since.
    pub(crate) fn restore<S: State>(core: &GraphCore<S>, stored: Vec<Vec<bool>>) -> Self {
        let fits = stored.len() == core.joins.len()
            && stored
                .iter()
                .zip(&core.joins)
                .all(|(s, j)| s.len() == j.sources);
        if fits { Self(stored) } else { Self::new(core) }
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

    fn finish(self) -> Vec<Task> {
        let mut tasks = Vec::new();
        self.finish_into(&mut tasks);
        tasks
    }

    /// Appends the planned tasks to `tasks`.
    fn finish_into(mut self, tasks: &mut Vec<Task>) {
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
pub(crate) fn start_tasks<S: State>(
    core: &GraphCore<S>,
    state: &S,
    scratch: &mut PlanScratch,
) -> Result<Vec<Task>, Error> {
    let mut planner = Planner::new(core, scratch);
    for &dest in &core.start_edges {
        planner.trigger(dest);
    }
    for branch in &core.start_branches {
        planner.route(crate::graph::START, branch, state)?;
    }
    Ok(planner.finish())
}

/// The tasks a run's input routes to (`Command::goto` given as run input).
pub(crate) fn goto_tasks<S: State>(
    core: &GraphCore<S>,
    gotos: Vec<Goto>,
    scratch: &mut PlanScratch,
) -> Result<Vec<Task>, Error> {
    let mut planner = Planner::new(core, scratch);
    for goto in gotos {
        planner.goto("the run's input", goto, None)?;
    }
    Ok(planner.finish())
}

/// The next step's tasks, after the tasks `done` ran (in apply order) and their writes were
/// applied to `state`. `gotos[i]` are the `Command` targets of `done[i]`.
pub(crate) fn next_tasks<S: State>(
    core: &GraphCore<S>,
    done: &[Task],
    mut gotos: Vec<Vec<Goto>>,
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
    gotos: &mut Vec<Vec<Goto>>,
    state: &S,
    joins: &mut JoinProgress,
    scratch: &mut PlanScratch,
    tasks: &mut Vec<Task>,
) -> Result<(), Error> {
    let mut planner = Planner::new(core, scratch);
    for (task, gotos) in done.iter().zip(gotos.drain(..)) {
        let node = &core.nodes[task.node];
        for &dest in &node.edges {
            planner.trigger(dest);
        }
        for &(join, position) in &node.joins {
            let seen = &mut joins.0[join];
            seen[position] = true;
            if seen.iter().all(|s| *s) {
                seen.iter_mut().for_each(|s| *s = false);
                planner.trigger(core.joins[join].target);
            }
        }
        if !gotos.is_empty() {
            for goto in gotos {
                planner.goto(&node.name, goto, node.destinations.as_deref())?;
            }
        }
        for branch in &node.branches {
            planner.route(&node.name, branch, state)?;
        }
    }
    planner.finish_into(tasks);
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
