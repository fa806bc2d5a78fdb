//! [`Command`] (update and route from a node) and [`SendTo`] (map-reduce fan-out).

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::interrupt::Resume;
use crate::state::State;

/// Runs a node once with its own input: the unit of map-reduce fan-out (LangGraph's `Send`,
/// named so that importing it never hides Rust's `std::marker::Send`).
///
/// A router (or a [`Command`]) returns several `SendTo`s to run one node many times in the
/// next super-step, each with a different input. The node reads its input with the
/// [`Input`](crate::Input) extractor; the sends run in the order given and their updates
/// are applied in that order.
///
/// ```
/// use graphkit::SendTo;
///
/// let sends: Vec<SendTo> = ["cats", "dogs"].into_iter().map(|s| SendTo::new("joke", s.to_string())).collect();
/// assert_eq!(sends[1].node(), "joke");
/// ```
#[derive(Clone)]
pub struct SendTo {
    pub(crate) node: NodeName,
    pub(crate) input: Packet,
}

/// The name of the node a [`SendTo`] runs: a `&'static str` (a literal or a `const`), kept
/// as it is, or an owned or shared string. A fan-out of a thousand sends to a literal
/// name allocates no name at all.
///
/// ```
/// use graphkit::SendTo;
/// use graphkit::nodes::NodeName;
///
/// let by_literal = SendTo::new("work", 1);
/// let by_string = SendTo::new(format!("wo{}", "rk"), 2);
/// assert_eq!(by_literal.node(), by_string.node());
/// assert_eq!(&*NodeName::from("work"), "work");
/// ```
#[derive(Clone)]
pub struct NodeName(NameRepr);

#[derive(Clone)]
enum NameRepr {
    Static(&'static str),
    Shared(Arc<str>),
}

impl std::ops::Deref for NodeName {
    type Target = str;

    fn deref(&self) -> &str {
        match &self.0 {
            NameRepr::Static(name) => name,
            NameRepr::Shared(name) => name,
        }
    }
}

impl fmt::Debug for NodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl From<&'static str> for NodeName {
    fn from(name: &'static str) -> Self {
        Self(NameRepr::Static(name))
    }
}

impl From<String> for NodeName {
    fn from(name: String) -> Self {
        Self(NameRepr::Shared(name.into()))
    }
}

impl From<Arc<str>> for NodeName {
    fn from(name: Arc<str>) -> Self {
        Self(NameRepr::Shared(name))
    }
}

impl From<&Arc<str>> for NodeName {
    fn from(name: &Arc<str>) -> Self {
        Self(NameRepr::Shared(Arc::clone(name)))
    }
}

impl SendTo {
    /// Runs `node` with `input`. A name borrowed for less than `'static` is passed owned
    /// (`name.to_owned()`).
    pub fn new<T>(node: impl Into<NodeName>, input: T) -> Self
    where
        T: Serialize + Clone + std::marker::Send + Sync + 'static,
    {
        Self {
            node: node.into(),
            input: Packet::new(input),
        }
    }

    /// One `SendTo` to `node` per input: the map step of a map-reduce, as a router
    /// returns it.
    ///
    /// ```
    /// use graphkit::SendTo;
    ///
    /// let subjects = vec!["lions".to_string(), "owls".to_string()];
    /// let sends = SendTo::each("joke", subjects.iter().cloned());
    /// assert_eq!(sends.len(), 2);
    /// assert_eq!(sends[1].node(), "joke");
    /// ```
    pub fn each<T>(node: impl Into<NodeName>, inputs: impl IntoIterator<Item = T>) -> Vec<Self>
    where
        T: Serialize + Clone + std::marker::Send + Sync + 'static,
    {
        let node = node.into();
        inputs
            .into_iter()
            .map(|input| Self {
                node: node.clone(),
                input: Packet::new(input),
            })
            .collect()
    }

    /// The target node.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The input as JSON (for display and checkpoints).
    pub fn input_json(&self) -> Option<Value> {
        self.input.to_json()
    }
}

impl fmt::Debug for SendTo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendTo")
            .field("node", &self.node)
            .field("input", &self.input.type_name())
            .finish()
    }
}

/// A type-erased Send input that can still be turned into JSON.
///
/// One reference-counted pointer (16 bytes): its type's name and JSON encoding come with
/// the value's vtable, so a task or a [`SendTo`] carrying it stays small, which a fan-out
/// of many sends holds once per task.
#[doc(hidden)]
#[derive(Clone)]
pub struct Packet {
    value: Arc<dyn PacketValue>,
}

/// What a [`Packet`] keeps of its value's type once erased: its name, its JSON form, and
/// the value as `Any` to take it back by type.
trait PacketValue: Any + std::marker::Send + Sync {
    fn type_name(&self) -> &'static str;
    fn to_json(&self) -> Option<Value>;
    fn as_any(&self) -> &(dyn Any + std::marker::Send + Sync);
}

impl<T: Serialize + std::marker::Send + Sync + 'static> PacketValue for T {
    fn type_name(&self) -> &'static str {
        std::any::type_name::<T>()
    }

    fn to_json(&self) -> Option<Value> {
        serde_json::to_value(self).ok()
    }

    fn as_any(&self) -> &(dyn Any + std::marker::Send + Sync) {
        self
    }
}

impl Packet {
    pub(crate) fn new<T: Serialize + std::marker::Send + Sync + 'static>(value: T) -> Self {
        Self {
            value: Arc::new(value),
        }
    }

    pub(crate) fn to_json(&self) -> Option<Value> {
        PacketValue::to_json(&*self.value)
    }

    /// The name of the value's type.
    pub(crate) fn type_name(&self) -> &'static str {
        PacketValue::type_name(&*self.value)
    }

    /// The value, to take it back by type.
    pub(crate) fn value(&self) -> &(dyn Any + std::marker::Send + Sync) {
        PacketValue::as_any(&*self.value)
    }
}

/// Where a [`Command`] routes.
#[derive(Debug, Clone)]
pub enum Goto {
    /// Run this node in the next super-step.
    Node(Arc<str>),
    /// Run a node with its own input.
    Send(SendTo),
}

impl From<&str> for Goto {
    fn from(node: &str) -> Self {
        Self::Node(node.into())
    }
}

impl From<String> for Goto {
    fn from(node: String) -> Self {
        Self::Node(node.into())
    }
}

impl From<SendTo> for Goto {
    fn from(send: SendTo) -> Self {
        Self::Send(send)
    }
}

/// Which graph a [`Command`] addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CommandGraph {
    /// The graph the node runs in.
    #[default]
    Current,
    /// The graph that runs this graph as a subgraph node (same state type only).
    Parent,
}

/// A node's result that updates the state and chooses where to go next.
///
/// Static edges out of the node still fire; `goto` adds targets to them, as in LangGraph.
///
/// ```
/// use graphkit::{Command, END, State};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
/// struct Review { verdict: String }
///
/// let command: Command<Review> = Command::new()
///     .update(ReviewUpdate::new().verdict("approved"))
///     .goto(END);
/// assert_eq!(command.targets().count(), 1);
/// ```
pub struct Command<S: State> {
    pub(crate) update: Option<S::Update>,
    pub(crate) goto: Vec<Goto>,
    pub(crate) graph: CommandGraph,
    pub(crate) resume: Option<Resume>,
}

impl<S: State> Default for Command<S> {
    fn default() -> Self {
        Self {
            update: None,
            goto: Vec::new(),
            graph: CommandGraph::Current,
            resume: None,
        }
    }
}

impl<S: State> fmt::Debug for Command<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Command")
            .field("update", &self.update)
            .field("goto", &self.goto)
            .field("graph", &self.graph)
            .field("resume", &self.resume)
            .finish()
    }
}

impl<S: State> Clone for Command<S> {
    fn clone(&self) -> Self {
        Self {
            update: self.update.clone(),
            goto: self.goto.clone(),
            graph: self.graph,
            resume: self.resume.clone(),
        }
    }
}

impl<S: State> Command<S> {
    /// An empty command (no update, no extra route).
    pub fn new() -> Self {
        Self::default()
    }

    /// Routes to `target` (a node name, `END`, or a [`SendTo`]).
    pub fn goto_only(target: impl Into<Goto>) -> Self {
        Self::new().goto(target)
    }

    /// A command that resumes a paused thread: run it as the input of `invoke_with` on the
    /// same thread. A plain value answers the single pending interrupt; use
    /// [`Resume::by_id`] for several.
    ///
    /// ```
    /// # use graphkit::{Command, State};
    /// # #[derive(State, Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
    /// # struct S { ok: bool }
    /// let resume: Command<S> = Command::resume("yes");
    /// ```
    pub fn resume(value: impl Into<Value>) -> Self {
        Self::from(Resume::Value(value.into()))
    }

    /// A command that answers several pending interrupts (from parallel tasks) by their ids
    /// ([`Interrupt::id`](crate::Interrupt::id)): [`Resume::by_id`] as a command.
    pub fn resume_by_id<K: Into<String>, V: Into<Value>>(
        answers: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Self::from(Resume::by_id(answers))
    }

    /// Sets the state update.
    #[must_use]
    pub fn update(mut self, update: S::Update) -> Self {
        self.update = Some(update);
        self
    }

    /// Adds a route target (a node name, `END`, or a [`SendTo`]).
    #[must_use]
    pub fn goto(mut self, target: impl Into<Goto>) -> Self {
        self.goto.push(target.into());
        self
    }

    /// Adds several route targets.
    #[must_use]
    pub fn goto_all<G: Into<Goto>>(mut self, targets: impl IntoIterator<Item = G>) -> Self {
        self.goto.extend(targets.into_iter().map(Into::into));
        self
    }

    /// Addresses the parent graph: the update and the route apply there, as if the
    /// subgraph node itself had returned them. Only for subgraphs with the parent's state type.
    #[must_use]
    pub fn to_parent(mut self) -> Self {
        self.graph = CommandGraph::Parent;
        self
    }

    /// The route targets, as node names (Sends report their node).
    pub fn targets(&self) -> impl Iterator<Item = &str> {
        self.goto.iter().map(|g| match g {
            Goto::Node(n) => &**n,
            Goto::Send(s) => &*s.node,
        })
    }

    /// The update, if any.
    pub fn update_ref(&self) -> Option<&S::Update> {
        self.update.as_ref()
    }

    /// The route targets, [`SendTo`]s included.
    pub fn gotos(&self) -> &[Goto] {
        &self.goto
    }

    /// The graph the command addresses.
    pub fn graph(&self) -> CommandGraph {
        self.graph
    }

    /// Takes the command apart: its update, its routes, and the graph it addresses (for
    /// code that merges several commands into one node output).
    pub fn into_parts(self) -> (Option<S::Update>, Vec<Goto>, CommandGraph) {
        (self.update, self.goto, self.graph)
    }
}

/// What a run starts from: a new input, a resume of a paused thread, a plain
/// continuation of the thread's last checkpoint, or a [`Command`].
///
/// The update type, the state itself and [`Command`] convert into it, so `invoke` takes
/// any of them.
#[derive(Debug)]
pub enum RunInput<S: State> {
    /// Apply this update to the thread's state and start from START.
    Update(S::Update),
    /// Answer pending interrupts and continue where the thread paused.
    Resume(Resume),
    /// Continue the thread's pending step without new input (after a static interrupt,
    /// a failure, or a crash).
    Continue,
    /// Continue the thread as a [`Command`] says, as LangGraph's `invoke(Command(...))`:
    /// its update is applied to the thread's state first (as the input), its `goto`
    /// targets join the pending step's tasks, and its resume value answers the pending
    /// interrupts. On a thread with no checkpoint (or without a checkpointer) the update
    /// is the input and the run starts at the `goto` targets, or at START without any.
    Command(Command<S>),
}

impl<S: State> From<Command<S>> for RunInput<S> {
    fn from(command: Command<S>) -> Self {
        match command {
            Command {
                update: None,
                goto,
                graph: CommandGraph::Current,
                resume,
            } if goto.is_empty() => match resume {
                Some(resume) => Self::Resume(resume),
                None => Self::Continue,
            },
            command => Self::Command(command),
        }
    }
}

/// A command that resumes with a prepared [`Resume`] and does nothing else.
impl<S: State> From<Resume> for Command<S> {
    fn from(resume: Resume) -> Self {
        Self {
            resume: Some(resume),
            ..Self::default()
        }
    }
}
