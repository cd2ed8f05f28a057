#!/usr/bin/env python3
"""Writes secrets.tsv and mojibake.tsv (the labelled hygiene sets) next to this script.

Every secret is FAKE: a random body of the real shape (seeded, so the files are reproducible),
often with FAKE/EXAMPLE/TEST inside; none was ever issued. Columns: label (1 = positive),
category (the rule a positive should hit, or what a negative looks like), content.
Run: python3 make_sets.py
"""
import base64, json, os, random, string

rnd = random.Random(19)
UP = string.ascii_uppercase + string.digits
AL = string.ascii_letters + string.digits
TOK = AL + "_-"


def r(alphabet, n):
    return "".join(rnd.choice(alphabet) for _ in range(n))


def fake(alphabet, n, mark="FAKE"):
    body = r(alphabet, n - len(mark))
    k = rnd.randrange(len(body) + 1)
    return body[:k] + mark + body[k:]


def b64url(obj):
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def jwt():
    head = b64url({"alg": "HS256", "typ": "JWT"})
    body = b64url({"sub": str(rnd.randrange(10**6)), "name": "Test User", "iat": 1700000000})
    return head + "." + body + "." + r(TOK, 43)


def pem(kind):
    lines = [r(AL + "+/", 64) for _ in range(4)]
    return f"-----BEGIN {kind}PRIVATE KEY----- " + " ".join(lines) + f" -----END {kind}PRIVATE KEY-----"


pos = [
    ("aws_access_key_id", f"The user's AWS access key is AKIA{fake(UP, 16)} for the staging account."),
    ("aws_access_key_id", f"aws_access_key_id = AKIA{r(UP, 16)}"),
    ("aws_access_key_id", f"Temporary creds from STS: ASIA{r(UP, 16)}, expires in an hour."),
    ("aws_access_key_id", f"She pasted her key AKIA{fake(UP, 16, 'TEST')} into the chat by mistake."),
    ("aws_access_key_id", f"用户的AWS密钥ID是AKIA{r(UP, 16)}，用于备份脚本。"),
    ("aws_access_key_id", f"Backup job uses AKIA{r(UP, 16)} (read-only IAM user)."),
    ("github_token", f"GitHub token for the deploy bot: ghp_{fake(AL, 36)}"),
    ("github_token", f"He uses ghp_{r(AL, 36)} to push to the private repo."),
    ("github_token", f"OAuth token gho_{r(AL, 36)} was saved from the login flow."),
    ("github_token", f"CI secret GITHUB_TOKEN=ghs_{fake(AL, 36, 'EXAMPLE')}"),
    ("github_token", f"用户的GitHub令牌：ghp_{r(AL, 36)}"),
    ("github_token", f"Refresh token ghr_{r(AL, 36)} for the GitHub app."),
    ("github_fine_grained_pat", f"Fine-grained PAT: github_pat_{r(AL, 22)}_{fake(AL, 59)}"),
    ("github_fine_grained_pat", f"use github_pat_{r(AL, 22)}_{r(AL, 59)} for the docs repo"),
    ("openai_api_key", f"OpenAI key for her side project: sk-proj-{fake(TOK, 48)}"),
    ("openai_api_key", f"OPENAI_API_KEY=sk-{r(AL, 20)}T3BlbkFJ{r(AL, 20)}"),
    ("openai_api_key", f"The assistant should call the API with sk-proj-{r(TOK, 64)} from now on."),
    ("openai_api_key", f"我的OpenAI密钥 sk-{fake(AL, 48)} 别告诉别人"),
    ("openai_api_key", f"service account key sk-svcacct-{r(TOK, 40)}"),
    ("anthropic_api_key", f"Anthropic API key: sk-ant-api03-{fake(TOK, 80)}"),
    ("anthropic_api_key", f"He keeps sk-ant-api03-{r(TOK, 90)} in his notes app."),
    ("anthropic_api_key", f"Claude key for the eval harness is sk-ant-admin01-{r(TOK, 70)}."),
    ("slack_token", f"Slack bot token xoxb-{r(string.digits, 12)}-{r(string.digits, 13)}-{fake(AL, 24)}"),
    ("slack_token", f"user token: xoxp-{r(string.digits, 12)}-{r(string.digits, 12)}-{r(string.digits, 13)}-{r('abcdef0123456789', 32)}"),
    ("slack_token", f"The webhook app uses xoxa-{r(string.digits, 11)}-{r(AL, 30)}"),
    ("slack_token", f"Slack 机器人令牌是 xoxb-{r(string.digits, 12)}-{r(string.digits, 12)}-{r(AL, 24)}"),
    ("stripe_key", f"Stripe live secret: sk_live_{fake(AL, 32)}"),
    ("stripe_key", f"restricted key rk_live_{r(AL, 40)} for the reporting job"),
    ("stripe_key", f"test mode key sk_test_{r(AL, 32)} in the sandbox"),
    ("google_api_key", f"Maps API key AIza{r(TOK, 35)}"),
    ("google_api_key", f"The Firebase config has apiKey: \"AIza{fake(TOK, 35)}\""),
    ("google_api_key", f"谷歌地图的key是AIza{r(TOK, 35)}"),
    ("jwt", f"Session token eyJ{jwt()[3:]}"),
    ("jwt", f"Authorization header was {jwt()}"),
    ("jwt", f"Copied this from devtools: {jwt()} (expires tomorrow)"),
    ("private_key", pem("RSA ")),
    ("private_key", "Her deploy key: " + pem("OPENSSH ")),
    ("private_key", "服务器私钥 " + pem("EC ")),
    ("connection_string", f"Prod database: postgres://admin:{r(AL, 14)}@db.internal.example:5432/app"),
    ("connection_string", f"mysql://root:Fake{r(AL, 8)}!@10.0.0.12/shop"),
    ("connection_string", f"MONGO_URL=mongodb+srv://svc_user:{r(AL, 18)}@cluster0.example.mongodb.net/?retryWrites=true"),
    ("connection_string", f"redis://default:{r(AL, 24)}@cache.example.com:6379"),
    ("connection_string", f"The queue is amqp://guest:Gu3st{r(AL, 6)}@rabbit.local:5672/"),
    ("password", "My email password is Hunter2024!"),
    ("password", "Password: Tr0ub4dor&3"),
    ("password", "She changed her password to BlueSky#77 last night."),
    ("password", "The wifi password is coffee4life2023"),
    ("password", "the password for the bank is Qx9!mLp2"),
    ("password", "pwd=Zz8812kq for the NAS admin page"),
    ("password", "Door passcode: 482913"),
    ("password", "His phone PIN is 4821."),
    ("password", "Netflix login: alice@example.com, password \"MovieNight88\""),
    ("password", "The router admin passwd: r0uterAdm1n"),
    ("password", "我的邮箱密码是Abc12345"),
    ("password", "家里wifi密码：hk2024wifi"),
    ("password", "服务器口令为 Tiger#88x"),
    ("password", "银行卡密码是 852963，别忘了"),
    ("password", "她把密码改成了qwe123ASD"),
    ("password", "公司VPN的密码: Vpn@2024Fall"),
    ("generic_api_key", f"weather api key = {r('abcdef0123456789', 32)}"),
    ("generic_api_key", f"OPENWEATHER_API_KEY={r(AL, 32)}"),
    ("generic_api_key", f"access token: {r(AL, 40)}"),
    ("generic_api_key", f"curl -H 'Authorization: Bearer {r(AL, 36)}' https://api.example.com/v1/me"),
    ("generic_api_key", f"client_secret: {r(TOK, 30)}"),
    ("generic_api_key", f"aws_secret_access_key = {r(AL + '+/', 40)}"),
    ("generic_api_key", f"翻译服务的密钥是 {r('abcdef0123456789', 32)}"),
    ("generic_api_key", f"Mailgun api_key: key-{r('abcdef0123456789', 32)}"),
]

neg = [
    ("password_manager", "The user uses 1Password for all work accounts."),
    ("password_manager", "She keeps her passwords in Bitwarden and syncs it to her phone."),
    ("password_manager", "My password manager is 1Password, the family plan."),
    ("password_manager", "He switched from LastPass to KeePassXC after the breach."),
    ("password_manager", "用户用1Password管理所有密码。"),
    ("password_talk", "She forgot her password again and had to reset it."),
    ("password_talk", "Alice changed her password yesterday."),
    ("password_talk", "The password policy requires 12 characters and a symbol."),
    ("password_talk", "The password must be at least 8 characters long."),
    ("password_talk", "Her password was reset by IT on Monday."),
    ("password_talk", "The wifi password is on the fridge."),
    ("password_talk", "The password is the same as her old one."),
    ("password_talk", "Her password is 12 characters long."),
    ("password_talk", "He set the password to expire every 90 days."),
    ("password_talk", "Password reset link expired, asked for a new one."),
    ("password_talk", "password: see the shared vault"),
    ("password_talk", "The PIN is in the envelope on the desk."),
    ("password_talk", "密码忘了，需要重置。"),
    ("password_talk", "她忘记了邮箱密码。"),
    ("password_talk", "密码需要至少8位，包含数字和字母。"),
    ("password_talk", "密码已修改，新密码在保险箱里。"),
    ("password_talk", "WiFi密码贴在冰箱上。"),
    ("password_talk", "口令是什么她不记得了。"),
    ("password_talk", "银行要求每三个月修改一次密码"),
    ("token_talk", "The API key is stored in the vault, not in the repo."),
    ("token_talk", "API key rotation is scheduled monthly."),
    ("token_talk", "Her GitHub token expired, she needs a new one."),
    ("token_talk", "token: expired"),
    ("token_talk", "The secret ingredient is cardamom."),
    ("token_talk", "Secret: she is planning a surprise party for Bob."),
    ("token_talk", "He hates being the bearer of bad news."),
    ("token_talk", "密钥需要每月轮换一次。"),
    ("token_talk", "AWS access keys start with AKIA, so she searched the logs for that prefix."),
    ("token_talk", "GitHub classic tokens begin with ghp_ and are 40 characters long."),
    ("token_talk", "JWTs start with eyJ because the header is base64 JSON."),
    ("token_talk", "She works on sk_live_ key rotation at the payments team."),
    ("billing", "Invoice INV-2024-00871 paid on 2024-03-02, amount $129.00."),
    ("billing", "Order #A7F3-22K9-QQ81 shipped via DHL."),
    ("billing", "UPS tracking number 1Z999AA10123456784."),
    ("billing", "发票号码 FP20240311001，金额 560 元。"),
    ("billing", "订单号 2024031112345678 已退款。"),
    ("billing", "Customer ID cus_Nffrfeuf3, billing plan Pro."),
    ("hash_url", "The fix is in https://github.com/acme/app/commit/3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39"),
    ("hash_url", "Download https://example.com/files/9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08/setup.exe"),
    ("hash_url", "Docker image digest sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    ("hash_url", "She reverted commit 7d1e2a4b9c in the monorepo."),
    ("hash_url", "The release tarball's sha256 is listed at https://downloads.example.org/v2.1/SHA256SUMS"),
    ("uuid", "Device id 550e8400-e29b-41d4-a716-446655440000 belongs to her laptop."),
    ("uuid", "The meeting room booking id is 123e4567-e89b-12d3-a456-426614174000."),
    ("uuid", "用户的会话ID是 6fa459ea-ee8a-3ca4-894e-db77e160355e"),
    ("lookalike", "She loves the SK-II facial treatment essence."),
    ("lookalike", "Task-1234567890abcdefghijklmnop is assigned to Bob."),
    ("lookalike", "Her favourite anime character is Aizawa Shota."),
    ("lookalike", "xoxo, hugs from grandma"),
    ("lookalike", "The certificate starts with -----BEGIN CERTIFICATE----- and is public."),
    ("lookalike", "-----BEGIN PUBLIC KEY----- MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA -----END PUBLIC KEY-----"),
    ("lookalike", "The app connects to postgres://localhost:5432/app in development."),
    ("lookalike", "Clone it with https://user@example.com/repo.git (ssh keys are set up)."),
    ("lookalike", "Docs say use postgres://USER:<password>@HOST/DB as the format."),
    ("lookalike", "The connection string is mysql://app:${DB_PASSWORD}@db/app"),
    ("lookalike", "Student ID 20231145, class of 2027."),
    ("lookalike", "ISBN 978-3-16-148410-0 is the book she wants."),
    ("lookalike", "His phone number is +1 415 555 0132."),
    ("lookalike", "She desk-booked seat 4B for Tuesday."),
    ("password_talk", "Password: ******"),
    ("password_talk", "password = <hidden>"),
    ("password_talk", "The password hint is her dog's name, Biscuit."),
    ("password_talk", "Her password is longer than 20 characters."),
    ("password_talk", "密码是她的生日。"),
    ("password_talk", "密码为空，需要设置。"),
    ("password_talk", "Map pin: dropped at the trailhead parking lot."),
    ("token_talk", "Secret Santa budget is $30 this year."),
    ("token_talk", "The secret to her sourdough is a 48-hour rise."),
    ("token_talk", "Her token limit is 4096 for the model."),
    ("token_talk", "Access token lifetime: 3600 seconds."),
    ("token_talk", "Her API key was revoked on 2024-05-01."),
    ("token_talk", "She stores the api_key in an .env file."),
    ("token_talk", "Bearer bonds were popular in the 1980s."),
    ("token_talk", "See https://jwt.io for decoding tokens."),
    ("token_talk", "She uses Google Authenticator for 2FA codes."),
]

mojibake_src_pos = [
    "Elle a commandé un café crème.", "She said it’s “fine” — really.", "Die Prüfung ist schwer, aber machbar.",
    "São Paulo é a maior cidade do Brasil.", "El niño comió piña en la mañana.", "Rendez-vous à la gare à 9h.",
    "Ärger über die Verspätung.", "He doesn’t like coffee.", "Price: €25 per month.",
    "naïve résumé façade", "Grüße aus München!", "Ça coûte très cher.",
    "今天天气很好，我们去公园。", "用户喜欢喝咖啡。", "我住在北京。", "東京の天気は晴れです。",
    "ありがとうございます。", "Øystein bor i Tromsø.", "Señor Núñez llegó tarde.", "The temperature was 25°C.",
    "Zürich is expensive.", "“Quoted” and ‘single’", "Crème brûlée is her favourite dessert.",
    "Le cœur a ses raisons.", "Привет, как дела?", "Straße und Fußgänger",
]
mojibake_extra_pos = [
    ("replacement_character", "Her name is Jos\ufffd Garc\ufffda."),
    ("replacement_character", "用户\ufffd\ufffd\ufffd喜欢咖啡"),
    ("replacement_character", "The caf\ufffd on 5th street closes at 8."),
    ("replacement_character", "\ufffd\ufffd\ufffd\ufffd"),
]
mojibake_neg = [
    "Elle a commandé un café crème.", "She said it’s “fine” — really.", "Die Prüfung ist schwer.",
    "São Paulo é a maior cidade do Brasil.", "El niño comió piña.", "naïve résumé façade",
    "Ärger über die Verspätung.", "Grüße aus München!", "Ça coûte très cher, «vraiment».",
    "今天天气很好，我们去公园。", "用户喜欢喝咖啡，不喜欢茶。", "東京の天気は晴れです。", "ありがとうございます。",
    "한국어를 공부하고 있어요.", "Øystein bor i Tromsø.", "Señor Núñez llegó tarde.", "The temperature was 25°C.",
    "Price: £5 and €10.", "© 2024 Example Ltd.", "Add ½ cup of sugar.", "Ångström units",
    "Œuvre complète de Molière", "Łódź is in Poland.", "Ελληνικά είναι ωραία.", "Русский язык",
    "Tiếng Việt có dấu.", "İstanbul'da yaşıyor.", "Čeština je těžká.", "Crème brûlée is her favourite.",
    "Le cœur a ses raisons.", "She scored 90% ± 2.", "Café au lait… and croissants.",
    "Straße und Fußgänger", "Ñandú is a bird.", "I ♥ NY 🎉", "x² + y² = z²", "SÃO PAULO (caps)",
]


def cp1252_mis(text):
    out = []
    for b in text.encode("utf-8"):
        try:
            out.append(bytes([b]).decode("cp1252"))
        except UnicodeDecodeError:
            out.append(chr(b))  # undefined in 1252: browsers show the C1 control
    return "".join(out)


here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "secrets.tsv"), "w", encoding="utf-8") as f:
    f.write("# label\tcategory\tcontent (generated by make_sets.py; every secret is fake)\n")
    for cat, text in pos:
        f.write(f"1\t{cat}\t{text}\n")
    for cat, text in neg:
        f.write(f"0\t{cat}\t{text}\n")
with open(os.path.join(here, "mojibake.tsv"), "w", encoding="utf-8") as f:
    f.write("# label\tcategory\tcontent (generated by make_sets.py)\n")
    for text in mojibake_src_pos:
        f.write(f"1\tdouble_encoded_utf8\t{cp1252_mis(text)}\n")
    for text in mojibake_src_pos[:6]:
        f.write(f"1\tlatin1_double_encoded\t{text.encode('utf-8').decode('latin-1')}\n")
    for cat, text in mojibake_extra_pos:
        f.write(f"1\t{cat}\t{text}\n")
    for text in mojibake_neg:
        f.write(f"0\tlegit\t{text}\n")
print(len(pos), "secret positives,", len(neg), "negatives")
