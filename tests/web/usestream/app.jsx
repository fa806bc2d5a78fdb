// A chat page on the official React hook `useStream` (@langchain/langgraph-sdk/react),
// driving graphkit-server's demo graph `agent` with `ask_human` set: the run answers,
// stops at the `human` node's interrupt, and the page shows the interrupt's question
// with a "resume" button that submits `Command({resume})`.
//
// The server's URL comes from the page's query (`?api=http://127.0.0.1:PORT`). The
// elements the browser test reads carry ids: #message, #send, #messages (one <li> per
// state message, with data-role), #interrupt, #question, #resume, #status
// (data-loading, data-thread), #error.

import { useState } from "react";
import { createRoot } from "react-dom/client";
import { useStream } from "@langchain/langgraph-sdk/react";

const apiUrl = new URLSearchParams(window.location.search).get("api");

function Chat() {
  const [text, setText] = useState("");
  const [threadId, setThreadId] = useState(null);
  const stream = useStream({
    apiUrl,
    assistantId: "agent",
    threadId,
    onThreadId: setThreadId,
  });
  const messages = stream.values?.messages ?? [];
  const interrupt = stream.interrupt;

  const send = (event) => {
    event.preventDefault();
    stream.submit({ messages: [{ role: "user", content: text }], ask_human: true });
    setText("");
  };
  const resume = () => stream.submit(undefined, { command: { resume: "approved" } });

  return (
    <main>
      <h1>graphkit chat</h1>
      <form onSubmit={send}>
        <input id="message" value={text} onChange={(e) => setText(e.target.value)} />
        <button id="send" type="submit" disabled={stream.isLoading}>send</button>
      </form>
      <ol id="messages">
        {messages.map((message, index) => (
          <li key={index} data-role={message.role}>
            {message.content}
          </li>
        ))}
      </ol>
      {interrupt?.value != null && !stream.isLoading ? (
        <section id="interrupt">
          <p id="question">{interrupt.value.question}</p>
          <button id="resume" type="button" onClick={resume}>resume</button>
        </section>
      ) : null}
      <p id="status" data-loading={String(stream.isLoading)} data-thread={threadId ?? ""}>
        {stream.isLoading ? "running" : "idle"}
      </p>
      {stream.error != null ? (
        <p id="error">{String(stream.error?.message ?? stream.error)}</p>
      ) : null}
    </main>
  );
}

createRoot(document.getElementById("root")).render(<Chat />);
