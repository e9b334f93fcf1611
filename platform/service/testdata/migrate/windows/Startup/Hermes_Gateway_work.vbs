' Hermes Agent Gateway - Messaging Platform Integration
target = "C:\Users\Ann Lee\AppData\Local\hermes\profiles\work\gateway-service\Hermes_Gateway_work.vbs"
