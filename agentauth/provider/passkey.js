// The pages' passkey ceremonies: adding a passkey through the user API,
// and answering a presence request with one. The page gives the request
// in data attributes of #passkey; nothing here runs on a page without it.
(() => {
  const box = document.getElementById("passkey");
  if (!box || !window.PublicKeyCredential) {
    const status = document.getElementById("passkey-status");
    if (box && status) status.textContent = "This browser cannot use passkeys.";
    return;
  }
  const status = document.getElementById("passkey-status");
  const say = (text) => { if (status) status.textContent = text; };
  const post = async (path, body) => {
    const res = await fetch(box.dataset.api + path, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": box.dataset.csrf },
      body: JSON.stringify(body),
    });
    const out = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(out.message || out.error_description || "the provider refused it (" + res.status + ")");
    return out;
  };
  const answer = async (options) => {
    const cred = await navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options.publicKey) });
    return cred.toJSON();
  };
  const add = async () => {
    const name = document.getElementById("passkey-name");
    const begin = await post("/passkeys/options", {});
    const body = { token: begin.token, name: name ? name.value : "" };
    if (begin.presence) {
      say("Confirm with a passkey you have first.");
      body.presence = { token: begin.presence.token, credential: await answer(begin.presence.options) };
    }
    const cred = await navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(begin.options.publicKey) });
    body.credential = cred.toJSON();
    await post("/passkeys", body);
    return cred.id;
  };
  const create = document.getElementById("create-passkey");
  if (create) create.addEventListener("click", async () => {
    create.disabled = true;
    say("Follow your browser's prompt to add the passkey.");
    try {
      const id = await add();
      if (box.dataset.after === "reload") {
        location.assign(location.pathname + "?done=passkey-added");
        return;
      }
      // The request was made before this passkey existed: ask for it by
      // its id, so that the browser does not offer other accounts'.
      box.dataset.created = id;
      document.getElementById("passkey-new").hidden = true;
      document.getElementById("passkey-use").hidden = false;
      say("Passkey added. Now confirm with it.");
    } catch (e) {
      say("The passkey was not added: " + e.message);
    } finally {
      create.disabled = false;
    }
  });
  const use = document.getElementById("use-passkey");
  if (use) use.addEventListener("click", async () => {
    use.disabled = true;
    say("Follow your browser's prompt to use your passkey.");
    try {
      const options = JSON.parse(box.dataset.options);
      if (box.dataset.created && !(options.publicKey.allowCredentials || []).length) {
        options.publicKey.allowCredentials = [{ type: "public-key", id: box.dataset.created }];
      }
      document.getElementById("passkey-credential").value = JSON.stringify(await answer(options));
      document.getElementById("presence-form").submit();
    } catch (e) {
      say("No passkey answered: " + e.message);
      use.disabled = false;
    }
  });
})();
