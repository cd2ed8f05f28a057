#!/usr/bin/env python3
"""Writes secrets.tsv and mojibake.tsv (the labelled hygiene sets) next to this script.

Every secret is FAKE: a random body of the real shape (seeded, so the files are reproducible),
often with FAKE/TEST inside (a value holding EXAMPLE is allowlisted, so it is a negative); none
was ever issued. Columns: label (1 = positive), category (the rule a positive should hit, or what
a negative looks like), content.
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
    ("github_token", f"CI secret GITHUB_TOKEN=ghs_{fake(AL, 36, 'TEST')}"),
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

# issue 19, part 3: vendor formats, command lines, other languages, codes, allowlist
HEX = "0123456789abcdef"
LOW = string.ascii_lowercase
pos += [
    ("gitlab_token", f"GitLab PAT for the mirror job: glpat-{r(TOK, 20)}"),
    ("gitlab_token", f"runner registered with glrt-{r(TOK, 24)} on the build box"),
    ("gitlab_token", f"deploy token gldt-{r(AL, 22)} pulls the images"),
    ("slack_webhook_url", f"Alerts go to https://hooks.slack.com/services/T{r(UP, 10)}/B{r(UP, 10)}/{r(AL, 24)}"),
    ("discord_webhook_url", f"the bot posts via https://discord.com/api/webhooks/{r(string.digits, 18)}/{r(TOK, 68)}"),
    ("discord_bot_token", f"Discord bot token N{r(AL, 25)}.{r(TOK, 6)}.{r(TOK, 38)} (music bot)"),
    ("twilio_api_key", f"Twilio API key SK{r(HEX, 32)} for the SMS reminders"),
    ("twilio_auth_token", f"twilio sid AC{r(HEX, 32)} and its token {r(HEX, 32)}"),
    ("npm_token", f"publish with NPM_TOKEN=npm_{r(AL, 36)}"),
    ("huggingface_token", f"HF token hf_{r(string.ascii_letters, 34)} for gated models"),
    ("huggingface_token", f"她的Hugging Face令牌 hf_{r(string.ascii_letters, 34)}"),
    ("azure_connection_string", f"DefaultEndpointsProtocol=https;AccountName=photos{r(LOW, 4)};AccountKey={r(AL + '+/', 86)}==;EndpointSuffix=core.windows.net"),
    ("azure_connection_string", f"Endpoint=sb://orders-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={r(AL + '+/', 43)}="),
    ("telegram_bot_token", f"Telegram bot: {r(string.digits, 10)}:AA{r(TOK, 33)}"),
    ("shopify_token", f"Shopify admin token shpat_{r(HEX, 32)}"),
    ("mapbox_secret_token", f"mapbox secret sk.eyJ1Ijoi{r(AL, 20)}.{r(TOK, 40)}"),
    ("linear_api_key", f"Linear key lin_api_{r(AL, 40)}"),
    ("fcm_server_key", f"FCM server key AAAA{r(TOK, 7)}:APA91b{r(TOK, 134)}"),
    ("gcp_oauth_client_secret", f"OAuth client secret GOCSPX-{r(TOK, 28)}"),
    ("sendgrid_api_key", f"SENDGRID_API_KEY=SG.{r(TOK, 22)}.{r(TOK, 43)}"),
    ("pypi_token", f"twine upload with pypi-AgEIcHlwaS5vcmc{r(TOK, 60)}"),
    ("digitalocean_token", f"doctl auth init -t dop_v1_{r(HEX, 64)}"),
    ("generic_api_key", f"DD_API_KEY={r(HEX, 32)}"),
    ("generic_api_key", f"datadog app key: {r(HEX, 40)}"),
    ("postman_api_key", f"Postman key PMAK-{r(HEX, 24)}-{r(HEX, 34)}"),
    ("mailgun_api_key", f"mail sender uses key-{r(HEX, 32)}"),
    ("square_token", f"Square sandbox token sq0atp-{r(TOK, 22)}"),
    ("databricks_token", f"databricks host token dapi{r(HEX, 32)}"),
    ("grafana_token", f"grafana service account glsa_{r(AL, 32)}_{r(HEX, 8)}"),
    ("doppler_token", f"DOPPLER_TOKEN=dp.pt.{r(AL, 43)}"),
    ("newrelic_key", f"New Relic user key NRAK-{r(UP, 27)}"),
    ("connection_string", f"sentry dsn https://{r(HEX, 32)}:{r(HEX, 32)}@sentry.example-host.io/42"),
    ("cli_credential", f"backup cron: mysqldump -u backup -p'{r(AL, 10)}!' shop > /srv/shop.sql"),
    ("cli_credential", f"run mysql -h db1 -u root -p{r(AL, 12)} analytics"),
    ("cli_credential", f"docker login -u ci-bot -p {r(AL, 16)} registry.internal"),
    ("cli_credential", f"curl -u deploy:{r(AL, 14)} https://artifacts.internal/upload"),
    ("cli_credential", f"sshpass -p '{r(AL, 10)}' ssh admin@10.1.2.3"),
    ("cli_credential", f"psql helper: PGPASSWORD={r(AL, 12)} psql -h db -U app"),
    ("cli_credential", f"restic backup --password {r(AL, 15)} /home"),
    ("basic_auth", "header was Authorization: Basic " + base64.b64encode(f"svc:{r(AL, 12)}".encode()).decode()),
    ("connection_string", f"cache at redis://:{r(AL, 20)}@cache-1:6379/0"),
    ("password", "Das WLAN-Passwort lautet Sonnen4Blume!"),
    ("password", "Mein Kennwort ist Kaffee#2025"),
    ("password", "La contraseña del wifi es Gato_Azul77"),
    ("password", "Le mot de passe est Fromage!42"),
    ("password", "A senha do banco é Praia2024#"),
    ("password", "La password di casa è Pizza9Napoli"),
    ("password", "Пароль от почты: Medved2024"),
    ("password", "ルーターのパスワードはNeko2024です"),
    ("password", "회사 비밀번호는 Hangul77! 입니다"),
    ("password", "Het wachtwoord is Fiets2024?"),
    ("password", "Wifi şifresi: Kahve1923"),
    ("password", "My password is Maple$Leaf99!"),
    ("access_code", "The garage code is 7352."),
    ("access_code", "alarm disarm code 3-8-1-5"),
    ("access_code", "safe combination 27-09-41"),
    ("access_code", "Gate code #8164 for the back entrance"),
    ("access_code", "Her phone PIN is 90417"),
    ("access_code", "door code: 2468#"),
    ("access_code", "玄関の暗証番号は5831です"),
    ("backup_codes", "GitHub recovery codes: 4f8a2-b91c0, 77d3e-0a5f2, c0e19-8b3d4, 59a7f-13c6e"),
    ("backup_codes", "Google backup codes 3941 7720 5816 0493 and 2275 9064"),
    ("totp_secret", f"TOTP secret for the VPN: {''.join(rnd.choice('ABCDEFGHIJKLMNOPQRSTUVWXYZ234567') for _ in range(32))}"),
    ("totp_secret", "authenticator setup key: " + " ".join("".join(rnd.choice('abcdefghijklmnopqrstuvwxyz234567') for _ in range(4)) for _ in range(8))),
    ("seed_phrase", "MetaMask seed phrase: orbit velvet hammer canyon pilot mango tissue river frost lemon wagon crisp"),
    ("seed_phrase", "wallet recovery phrase is ladder ocean brisk timber sunny cotton mirror eagle violin plastic random quote jungle humble pepper summit glove hobby noble crater sketch dolphin raven cabin"),
    ("payment_card", "Visa card 4539 1488 0343 6467, exp 09/27, CVV 318"),
    ("payment_card", "her Mastercard number is 5425-2334-3010-9903"),
]
pos += [
    ("cli_credential", f"redis-cli -h cache -a {r(AL, 14)} info"),
    ("cli_credential", f"mongosh -u root -p {r(AL, 12)} --authenticationDatabase admin"),
    ("password", "Hasło do routera: Lipa2024!"),
    ("password", "Lösenordet? lösenord: Ekorre77x"),
    ("password", "门禁密码是 4096"),
    ("password", "meu wifi, senha: Cachorro#9"),
    ("access_code", "The code for the storage unit is 3307"),
    ("access_code", "combination to the bike lock is 5-1-9"),
    ("seed_phrase", "Ledger 24 words, seed: Anchor bubble cereal dragon elbow fabric galaxy hollow ivory jelly kettle lunar marble nectar oyster parrot quiver rocket saddle tennis umbrella vendor walrus yellow"),
    ("payment_card", "Kreditkarte 3714 496353 98431, gültig bis 08/28"),
    ("totp_secret", f"otpauth://totp/Acme:jo?secret={''.join(rnd.choice('ABCDEFGHIJKLMNOPQRSTUVWXYZ234567') for _ in range(26))}&issuer=Acme"),
    ("generic_api_key", f"datadog api key {r(HEX, 32)}"),
]
pos += [
    ("access_code", "Código de la puerta del garaje: 6620"),
    ("access_code", "key lockbox 1907 by the back stairs"),
    ("cli_credential", f"sshpass -p '{r(string.ascii_lowercase, 11)}' scp backup.tar nas:/vol1"),
    ("backup_codes", "Dropbox recovery codes are " + ", ".join(r(UP, 10) for _ in range(3))),
    ("generic_api_key", f"wallet private key: 0x{r(HEX, 64)}"),
    ("password", f"DB_PASSWORD={r(string.ascii_lowercase, 10)}"),
    ("generic_api_key", f"Algolia admin key: {r(HEX, 32)}"),
]
neg += [
    ("allowlist", "AWS docs use AKIAIOSFODNN7EXAMPLE as the sample access key id."),
    ("allowlist", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("allowlist", f"The README shows a dummy token ghp_{r(AL, 36)} in the screenshot."),
    ("allowlist", f"placeholder key sk_live_{r(AL, 28)} used in the docs"),
    ("allowlist", "Example password: Hunter2024!"),
    ("token_talk", "GitLab personal access tokens start with glpat- and expire after a year."),
    ("token_talk", "She set up a Slack incoming webhook for the deploy channel."),
    ("token_talk", "Hugging Face tokens begin with hf_ and can be read-only."),
    ("token_talk", "The Discord bot token was reset after the leak."),
    ("token_talk", "Twilio account SID AC and the auth token are on the console page."),
    ("token_talk", "The Azure storage account key was rotated on Friday."),
    ("token_talk", "npm tokens can be granular and scoped to one package."),
    ("cli_talk", "Run mysql -p and type the password at the prompt."),
    ("cli_talk", "docker login --password-stdin reads it from a pipe."),
    ("cli_talk", "docker run -u 1000:1000 -p 8080:80 nginx"),
    ("cli_talk", "curl -u \"$USER:$TOKEN\" https://api.example.org"),
    ("cli_talk", "Set PGPASSWORD in the environment, never on the command line."),
    ("cli_talk", "The header is Authorization: Basic followed by base64 of user:pass."),
    ("password_talk", "Das Passwort muss mindestens 12 Zeichen lang sein."),
    ("password_talk", "Sie hat ihr Kennwort vergessen."),
    ("password_talk", "Olvidó su contraseña otra vez."),
    ("password_talk", "Le mot de passe est dans le coffre."),
    ("password_talk", "パスワードを忘れました。"),
    ("password_talk", "Пароль нужно менять каждые три месяца."),
    ("password_talk", "비밀번호를 재설정했어요."),
    ("password_talk", "Şifre en az 8 karakter olmalı."),
    ("code_talk", "The zip code is 94107."),
    ("code_talk", "Her area code is 415."),
    ("code_talk", "The door code changed last week, ask Tom."),
    ("code_talk", "The PIN must be 4 digits."),
    ("code_talk", "A combination of 3 drugs was prescribed."),
    ("code_talk", "Error code 4012 means the card was declined."),
    ("code_talk", "The safe code was reset on 2024-03-05."),
    ("code_talk", "She saved her backup codes in 1Password."),
    ("code_talk", "Recovery codes were regenerated after the phone was lost."),
    ("code_talk", "She enabled TOTP for her email account."),
    ("code_talk", "Mnemonic devices help students remember the planets."),
    ("code_talk", "Never share your seed phrase with anyone, not even support."),
    ("card_talk", "Her Visa card expires next month."),
    ("card_talk", "Order 4539148803436467 shipped today."),
    ("card_talk", "Card ending in 6467 was charged $20."),
    ("lookalike", f"GPG fingerprint {' '.join(r('0123456789ABCDEF', 4) for _ in range(10))}"),
    ("lookalike", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG7fX2lYq3Jz0kqPp9mR4uVtWc8sN1dHbE5aKoL6yTfQ alice@laptop"),
    ("lookalike", "Her IBAN is DE89 3704 0044 0532 0130 00."),
    ("lookalike", "Send ETH to 0x52908400098527886E0F7030069857D2E4169EE7 for the raffle."),
    ("lookalike", "Bitcoin address bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"),
    ("lookalike", "USPS tracking 9400 1000 0000 0000 0000 00"),
    ("lookalike", "The commit sha is 9fceb02d0ae598e95dc970b74767f19372d61af8."),
    ("code_talk", "The zip code for the office is 94107."),
    ("code_talk", "The motor code 4412 was logged by the mechanic."),
    ("code_talk", "Source code for the garage app is on GitHub."),
    ("password_talk", "Password Reset2024 email was sent to her."),
    ("password_talk", "Hasło musi mieć 12 znaków."),
    ("code_talk", "Her seed phrase is written on paper in the safe."),
    ("card_talk", "Her library card number is on the back of the card."),
    ("cli_talk", "redis-cli -a reads the password from REDISCLI_AUTH instead."),
    ("code_talk", "Your verification code is 731904, it expires in 10 minutes."),
    ("code_talk", "Password reset code sent to her phone."),
    ("lookalike", "Pay by card or transfer to IBAN GB33 BUKB 2020 1555 5555 55."),
    ("lookalike", f"GPG signing key fingerprint {r('0123456789ABCDEF', 40)}"),
    ("code_talk", "Order #4821 was left by the door."),
    ("token_talk", "Her account key is in the vault; the access key was rotated."),
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
