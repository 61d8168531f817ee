// The login page: `mcpx ui` opens /ui/login#<one-time ticket>. The fragment never leaves
// the browser in a request; it is taken off the address bar (and this history entry) at
// once, then posted as JSON for the session cookie, and the console opens.

const status = document.getElementById("login-status");
const ticket = location.hash.slice(1);
const signedOut = new URLSearchParams(location.search).has("signed-out");
history.replaceState(null, "", location.pathname);

async function login() {
  if (!ticket && signedOut) {
    status.textContent = "Signed out. To open the console again, run `mcpx ui` where the daemon runs.";
    return;
  }
  if (!ticket) {
    status.textContent = "This console needs a login: run `mcpx ui` where the daemon runs; it opens the console logged in.";
    return;
  }
  const response = await fetch("/ui/login", {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify({ ticket }),
    cache: "no-store",
  });
  if (response.ok) {
    location.replace("/ui");
    return;
  }
  let message = `the login was refused (${response.status})`;
  try {
    message = (await response.json()).error.message || message;
  } catch {
    // not JSON: the status says it
  }
  status.textContent = message;
  status.classList.add("error");
}

login().catch((exc) => { status.textContent = `the login failed: ${exc.message}`; });
