// A real OpenID Connect provider for the single sign-on tests (tests/e2e/test_sso_provider.py):
// panva/oidc-provider with its development login pages, one confidential client (procmem), and
// accounts read from a JSON file at every sign-in, so a test can change a user's groups between two
// sign-ins. Arguments: <port> <redirect URI> <accounts JSON file>; ID_TOKEN_TTL sets the ID token's
// lifetime in seconds. Prints "listening" when it answers.
import fs from 'node:fs';
import Provider from 'oidc-provider';

const [port, redirectUri, accountsFile] = process.argv.slice(2);

const configuration = {
  clients: [{
    client_id: 'procmem',
    client_secret: 'procmem-test-secret',
    redirect_uris: [redirectUri],
    response_types: ['code'],
    grant_types: ['authorization_code'],
    token_endpoint_auth_method: 'client_secret_post',
  }],
  scopes: ['openid', 'email', 'profile', 'groups'],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'preferred_username'],
    groups: ['groups'],
  },
  async findAccount(ctx, id) {
    const accounts = JSON.parse(fs.readFileSync(accountsFile, 'utf8'));
    if (!accounts[id]) return undefined;
    return { accountId: id, async claims() { return { sub: id, ...accounts[id] }; } };
  },
  conformIdTokenClaims: false, // the ID token carries the scopes' claims too (groups among them)
  features: { devInteractions: { enabled: true } },
  ttl: { IdToken: Number(process.env.ID_TOKEN_TTL || 3600), AccessToken: 3600, AuthorizationCode: 60 },
  cookies: { keys: ['procmem-test-cookie-key'] },
  pkce: { required: () => true },
};

const provider = new Provider(`http://127.0.0.1:${port}`, configuration);
provider.listen(Number(port), '127.0.0.1', () => console.log('listening'));
