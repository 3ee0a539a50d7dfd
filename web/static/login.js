// Signing in to the dashboard when the server requires credentials
// (passbook serve with authentication): GET api/whoami says whether it
// does and who we are; the form posts api/login, which sets an HttpOnly
// session cookie that the page's fetches and its EventSource then carry.

const XRW = { "X-Requested-With": "passbook-dashboard" }; // no browser pop-up on a 401

/** whoami is the server's {user, method, auth_required, acls}, or null. */
export async function whoami() {
  try {
    const r = await fetch("api/whoami", { headers: XRW, cache: "no-store" });
    return r.ok ? await r.json() : null;
  } catch {
    return null;
  }
}

/** needsSignIn: the server wants credentials and we have none. */
export const needsSignIn = (who) => !!who && who.auth_required && !who.user;

/** showSignIn replaces the page with the sign-in form. */
export function showSignIn(message) {
  document.getElementById("main").hidden = true;
  const box = document.getElementById("signin");
  box.hidden = false;
  const err = document.getElementById("signin-error");
  err.textContent = message || "";
  err.hidden = !message;
  document.getElementById("signin-user").focus();
}

/** showUser puts who is signed in, and a sign-out button, in the bar. */
export function showUser(who) {
  const el = document.getElementById("who");
  if (!who || !who.user) { el.hidden = true; return; }
  el.hidden = false;
  document.getElementById("who-name").textContent = who.user;
  // Only a session can be ended from here: Basic and bearer credentials
  // are the browser's or the client's own.
  document.getElementById("signout").hidden = who.method !== "session";
}

document.getElementById("signin-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const user = document.getElementById("signin-user").value;
  const password = document.getElementById("signin-password").value;
  const button = e.target.querySelector("button");
  button.disabled = true;
  try {
    const r = await fetch("api/login", {
      method: "POST", headers: { ...XRW, "Content-Type": "application/json" }, body: JSON.stringify({ user, password }),
    });
    if (r.ok) { location.reload(); return; }
    let msg = "Signing in failed (" + r.status + ").";
    try { msg = (await r.json()).error.message; } catch { /* not JSON */ }
    showSignIn(msg.charAt(0).toUpperCase() + msg.slice(1) + ".");
    document.getElementById("signin-password").select();
  } catch {
    showSignIn("The server does not answer.");
  } finally {
    button.disabled = false;
  }
});

document.getElementById("signout").addEventListener("click", async () => {
  try { await fetch("api/logout", { method: "POST", headers: XRW }); } finally { location.reload(); }
});
