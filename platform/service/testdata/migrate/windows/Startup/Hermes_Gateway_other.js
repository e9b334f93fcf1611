// Hermes Agent Gateway - Messaging Platform Integration
var target = "C:\\Users\\Ann Lee\\AppData\\Local\\hermes\\profiles\\work\\gateway-service\\Hermes_Gateway_work.js";
// C:\Users\Ann Lee\AppData\Local\hermes\gateway-service\ in a comment starts nothing
