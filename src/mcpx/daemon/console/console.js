// The console's router: one page per hash (#servers #tools #prompts #resources #questions
// #events #calls), each drawn from /v1 answers into <main>. A page's timers and streams end when it does.

import { promptsPage, resourcesPage } from "./browse.js";
import { api, clear, el } from "./dom.js";
import { callsPage, eventsPage } from "./live.js";
import { questionsPage, serversPage, toolsPage } from "./pages.js";

const PAGES = {
  servers: ["Servers", serversPage],
  tools: ["Tools", toolsPage],
  prompts: ["Prompts", promptsPage],
  resources: ["Resources", resourcesPage],
  questions: ["Questions", questionsPage],
  events: ["Events", eventsPage],
  calls: ["Calls & tasks", callsPage],
};

let leaving = [];

function life() {
  const endings = [];
  leaving = endings;
  return {
    // fn now and every ms after, until the page is left; a run waits for the last.
    every(ms, fn) {
      let stopped = false;
      let timer = null;
      const tick = async () => {
        try {
          await fn();
        } finally {
          if (!stopped) timer = setTimeout(tick, ms);
        }
      };
      endings.push(() => {
        stopped = true;
        clearTimeout(timer);
      });
      tick();
    },
    onLeave(fn) {
      endings.push(fn);
    },
    get left() {
      return leaving !== endings;
    },
  };
}

function show() {
  leaving.forEach((fn) => fn());
  const name = location.hash.slice(1).split("/")[0] || "servers";
  const [title, page] = PAGES[name] || PAGES.servers;
  const main = clear(document.getElementById("page"));
  document.title = `${title} · mcpx`;
  for (const a of document.querySelectorAll("nav a")) {
    if (a.getAttribute("href") === `#${name}`) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  main.append(el("h2", {}, title));
  page(main, life());
}

// The questions badge in the menu: how many wait, on every page.
async function countQuestions() {
  const badge = document.getElementById("question-count");
  try {
    const { status, body } = await api("GET", "/v1/questions");
    const n = status === 200 ? body.questions.length : 0;
    badge.textContent = String(n);
    badge.hidden = n === 0;
    badge.setAttribute("aria-label", `${n} waiting`);
  } catch {
    badge.hidden = true;
  }
  setTimeout(countQuestions, 2000);
}

// Signed in with a session (a daemon whose port needs a token): the session can end here.
function offerSignOut() {
  if (document.querySelector('meta[name="mcpx-console-signed-in"]').content !== "yes") return;
  const button = document.getElementById("sign-out");
  button.hidden = false;
  button.addEventListener("click", async () => {
    button.disabled = true;
    const { status } = await api("POST", "/ui/logout", {});
    if (status === 200) location.replace("/ui/login?signed-out");
    else button.disabled = false;
  });
}

window.addEventListener("hashchange", show);
show();
countQuestions();
offerSignOut();
